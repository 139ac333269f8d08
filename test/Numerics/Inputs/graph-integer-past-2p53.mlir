// A graph whose index arithmetic leaves the integers float64 holds exactly (INT64_MIN / -1 among them: it trapped).
func.func @g(%q: tensor<1x2x37x32xf32>, %k: tensor<1x2x37x32xf32>, %v: tensor<1x2x37x32xf32>) -> tensor<1x2x37x32xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x2x37x32xf32>, tensor<1x2x37x32xf32> -> tensor<1x2x37x37xf32>
  %t = flash.scale %s by 0.17677669529663687 : tensor<1x2x37x37xf32>
  %qi = tensor.generate {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %mn = arith.constant -9223372036854775808 : index
    %m1 = arith.constant -1 : index
    %d = arith.divsi %mn, %m1 : index
    %r = arith.addi %d, %i : index
    tensor.yield %r : index
  } : tensor<1x2x37x37xindex>
  %ki = tensor.generate {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %mn = arith.constant -9223372036854775808 : index
    %r = arith.addi %mn, %j : index
    tensor.yield %r : index
  } : tensor<1x2x37x37xindex>
  %visible = arith.cmpi sge, %qi, %ki : tensor<1x2x37x37xindex>
  %minus = arith.constant dense<0xFF800000> : tensor<1x2x37x37xf32>
  %m = arith.select %visible, %t, %minus : tensor<1x2x37x37xi1>, tensor<1x2x37x37xf32>
  %p = flash.softmax %m : tensor<1x2x37x37xf32>
  %o = flash.matmul %p, %v : tensor<1x2x37x37xf32>, tensor<1x2x37x32xf32> -> tensor<1x2x37x32xf32>
  return %o : tensor<1x2x37x32xf32>
}
