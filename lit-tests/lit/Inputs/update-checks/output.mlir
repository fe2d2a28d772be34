module {
  func.func @double(%arg0: f32) -> f32 {
    %0 = arith.addf %arg0, %arg0 : f32
    return %0 : f32
  }
  func.func @branch(%arg0: i1, %arg1: i32) -> i32 {
    cf.cond_br %arg0, ^bb1, ^bb2
  ^bb1:  // pred: ^bb0
    return %arg1 : i32
  ^bb2:  // pred: ^bb0
    %c0 = arith.constant 0 : i32
    return %c0 : i32
  }
}
