// What MLIR's C API does not expose and the bridge needs: the key and the
// bytes of a `dense_resource` attribute's blob. The C API reads such an
// attribute only element by element (and not at all for f16, bf16 or FP8),
// which would cost a call per weight; this hands over the blob's bytes in
// place, so they cross into ipuc as one copy and never as text.

#include "mlir-c/IR.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

extern "C" bool ipucDenseResourceBlob(MlirAttribute attr, MlirStringRef *key,
                                      const void **data, size_t *size,
                                      size_t *alignment) {
  auto resource = llvm::dyn_cast_or_null<mlir::DenseResourceElementsAttr>(
      mlir::Attribute::getFromOpaquePointer(attr.ptr));
  if (!resource)
    return false;
  mlir::DenseResourceElementsHandle handle = resource.getRawHandle();
  llvm::StringRef k = handle.getKey();
  *key = MlirStringRef{k.data(), k.size()};
  const mlir::AsmResourceBlob *blob = handle.getBlob();
  if (!blob) {
    // A reference whose blob the file never defined.
    *data = nullptr;
    *size = 0;
    *alignment = 1;
    return true;
  }
  llvm::ArrayRef<char> bytes = blob->getData();
  *data = bytes.data();
  *size = bytes.size();
  *alignment = blob->getDataAlignment();
  return true;
}
