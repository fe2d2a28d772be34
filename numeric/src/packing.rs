//! ONNX's packed layout of the sub-byte element kinds: two 4-bit or four 2-bit
//! elements per byte, the first element in the least significant bits
//! (`x0 | x1 << 4`, `x0 | x1 << 2 | x2 << 4 | x3 << 6`), the last byte zero-padded.
//! The same layout holds for `raw_data` and for each `int32_data` entry of a
//! `TensorProto` (`onnx.proto`, `TensorProto.int32_data` and `raw_data`).
//!
//! In memory every element has a byte of its own ([`ElementKind`]'s layout); these
//! functions convert between the two.

use super::ElementKind;

/// Elements per packed byte: 2 for 4-bit kinds, 4 for 2-bit kinds, 1 otherwise.
pub const fn elements_per_byte(kind: ElementKind) -> usize {
    if kind.is_sub_byte() {
        (8 / kind.bit_width()) as usize
    } else {
        1
    }
}

/// Bytes that `count` elements of `kind` take packed (`count * byte_size` for kinds
/// that are not packed); `None` on overflow.
pub fn packed_len(kind: ElementKind, count: usize) -> Option<usize> {
    if kind.is_sub_byte() {
        Some(count.div_ceil(elements_per_byte(kind)))
    } else {
        count.checked_mul(kind.byte_size())
    }
}

/// The in-memory byte of a `kind` element whose code is in the low bits of `code`:
/// masked to the element's width, sign-extended for signed integers.
pub fn widen_code(kind: ElementKind, code: u8) -> u8 {
    let bits = kind.bit_width();
    let shift = 8 - bits;
    if kind.is_signed_integer() {
        (((code << shift) as i8) >> shift) as u8
    } else {
        code & (0xFF >> shift)
    }
}

/// Unpacks the first `count` elements of `packed` into one byte each. `None` if
/// `packed` is shorter than [`packed_len`] says. Kinds that are not packed are copied.
pub fn unpack(kind: ElementKind, packed: &[u8], count: usize) -> Option<Vec<u8>> {
    let len = packed_len(kind, count)?;
    if packed.len() < len {
        return None;
    }
    if !kind.is_sub_byte() {
        return Some(packed[..len].to_vec());
    }
    let bits = kind.bit_width() as usize;
    let per_byte = elements_per_byte(kind);
    Some(
        (0..count)
            .map(|i| widen_code(kind, packed[i / per_byte] >> ((i % per_byte) * bits)))
            .collect(),
    )
}

/// Packs in-memory elements (one byte each) into ONNX's layout, zero-padding the
/// last byte. Kinds that are not packed are copied.
pub fn pack(kind: ElementKind, elements: &[u8]) -> Vec<u8> {
    if !kind.is_sub_byte() {
        return elements.to_vec();
    }
    let bits = kind.bit_width() as usize;
    let per_byte = elements_per_byte(kind);
    let mask = (1u8 << bits) - 1;
    elements
        .chunks(per_byte)
        .map(|chunk| {
            chunk
                .iter()
                .enumerate()
                .fold(0u8, |byte, (j, &e)| byte | (e & mask) << (j * bits))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SUB_BYTE: [ElementKind; 5] = [
        ElementKind::I2,
        ElementKind::I4,
        ElementKind::U2,
        ElementKind::U4,
        ElementKind::F4E2M1FN,
    ];

    #[test]
    fn layout_is_low_bits_first() {
        // test_cast_FLOAT16_to_INT4's expected output starts 0x87: 7 then -8.
        assert_eq!(unpack(ElementKind::I4, &[0x87], 2), Some(vec![7, 0xF8]));
        assert_eq!(unpack(ElementKind::U4, &[0x87], 2), Some(vec![7, 8]));
        // test_cast_FLOAT_to_INT2: 0x39 = 01 10 11 10... low first: 1, -2, -1, 0.
        assert_eq!(
            unpack(ElementKind::I2, &[0x39], 4),
            Some(vec![1, 0xFE, 0xFF, 0])
        );
        assert_eq!(
            pack(ElementKind::I2, &[1, 0xFE, 0xFF, 0, 1]),
            vec![0x39, 0x01]
        );
        assert_eq!(pack(ElementKind::I4, &[7, 0xF8, 0xFF]), vec![0x87, 0x0F]);
        assert_eq!(packed_len(ElementKind::I4, 5), Some(3));
        assert_eq!(packed_len(ElementKind::U2, 5), Some(2));
        assert_eq!(packed_len(ElementKind::F32, 5), Some(20));
        assert_eq!(unpack(ElementKind::U4, &[0x87], 3), None);
    }

    proptest! {
        #[test]
        fn pack_unpack_round_trips(codes in proptest::collection::vec(any::<u8>(), 0..40), k in 0usize..5) {
            let kind = SUB_BYTE[k];
            let elements: Vec<u8> = codes.iter().map(|&c| widen_code(kind, c)).collect();
            let packed = pack(kind, &elements);
            prop_assert_eq!(Some(packed.len()), packed_len(kind, elements.len()));
            prop_assert_eq!(unpack(kind, &packed, elements.len()), Some(elements));
        }

        #[test]
        fn unpacking_arbitrary_bytes_is_total(bytes in proptest::collection::vec(any::<u8>(), 0..16), k in 0usize..5, count in 0usize..80) {
            let kind = SUB_BYTE[k];
            let unpacked = unpack(kind, &bytes, count);
            prop_assert_eq!(unpacked.is_some(), packed_len(kind, count).unwrap() <= bytes.len());
            if let Some(elements) = unpacked {
                // Every element is canonical: re-widening changes nothing.
                prop_assert!(elements.iter().all(|&e| widen_code(kind, e) == e));
            }
        }
    }
}
