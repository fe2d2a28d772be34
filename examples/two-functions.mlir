// An example module for the README's main command.
module {
  func.func @f(%a: i32) -> i32 {
    return %a : i32
  }
  func.func private @dead() {
    return
  }
  func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = func.call @f2(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @f2(tensor<4xf32>) -> tensor<4xf32>
}
