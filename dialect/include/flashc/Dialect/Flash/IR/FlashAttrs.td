//===- FlashAttrs.td - flash enums and attributes --------*- tablegen -*-===//
#ifndef FLASHC_DIALECT_FLASH_IR_FLASHATTRS_TD
#define FLASHC_DIALECT_FLASH_IR_FLASHATTRS_TD

include "flashc/Dialect/Flash/IR/FlashDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums. Ops print them as bare keywords (`flash.gelu tanh %x`).
//===----------------------------------------------------------------------===//

def Flash_MaskKind : I32EnumAttr<"MaskKind", "which (query, key) pairs an attention mask keeps", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Causal", 1, "causal">,
    I32EnumAttrCase<"SlidingWindow", 2, "sliding_window">]> {
  let cppNamespace = "::mlir::flash";
  // Only used as a parameter of #flash.mask, never as an attribute of its own.
  let genSpecializedAttr = 0;
}

def Flash_GeluApproximation : I32EnumAttr<"GeluApproximation", "GeLU formula", [
    I32EnumAttrCase<"Tanh", 0, "tanh">,
    I32EnumAttrCase<"Erf", 1, "erf">]> {
  let cppNamespace = "::mlir::flash";
}

def Flash_Activation : I32EnumAttr<"Activation", "FFN activation function", [
    I32EnumAttrCase<"GeluTanh", 0, "gelu_tanh">,
    I32EnumAttrCase<"GeluErf", 1, "gelu_erf">,
    I32EnumAttrCase<"Silu", 2, "silu">,
    I32EnumAttrCase<"Relu", 3, "relu">]> {
  let cppNamespace = "::mlir::flash";
}

def Flash_MoeGating : I32EnumAttr<"MoeGating", "how a mixture of experts scores its router logits", [
    I32EnumAttrCase<"Softmax", 0, "softmax">,
    I32EnumAttrCase<"Sigmoid", 1, "sigmoid">]> {
  let cppNamespace = "::mlir::flash";
}

//===----------------------------------------------------------------------===//
// #flash.mask
//===----------------------------------------------------------------------===//

def Flash_MaskAttr : AttrDef<Flash_Dialect, "Mask"> {
  let mnemonic = "mask";
  let summary = "Attention mask over a [.., Sq, Sk] score matrix";
  let description = [{
    Syntax: `#flash.mask<none>`, `#flash.mask<causal>`,
    `#flash.mask<sliding_window, left = L, right = R>` (L, R >= -1; -1 means
    unbounded on that side; at most one side may be unbounded).

    Positions are aligned at the bottom-right corner, as in FlashAttention-2:
    query row i (0 <= i < Sq) sits at key position p = i + Sk - Sq. Then
      - none:           every key is visible;
      - causal:         key j is visible iff j <= p;
      - sliding_window: key j is visible iff p - L <= j <= p + R
                        (a side with -1 has no bound).
    With Sq == Sk, p = i. Invisible scores become -inf before the softmax.
    `isKeyVisible` implements exactly this rule; every stage uses it.
  }];
  let parameters = (ins
    "::mlir::flash::MaskKind":$kind,
    DefaultValuedParameter<"int64_t", "-1">:$windowLeft,
    DefaultValuedParameter<"int64_t", "-1">:$windowRight);
  let builders = [
    AttrBuilder<(ins "::mlir::flash::MaskKind":$kind), [{
      return $_get($_ctxt, kind, -1, -1);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isNone() const { return getKind() == ::mlir::flash::MaskKind::None; }
    bool isCausal() const { return getKind() == ::mlir::flash::MaskKind::Causal; }
    bool isSlidingWindow() const {
      return getKind() == ::mlir::flash::MaskKind::SlidingWindow;
    }
    /// True when key `keyIndex` is visible from query row `queryIndex` of a
    /// numQueries x numKeys score matrix (bottom-right aligned, see above).
    bool isKeyVisible(int64_t queryIndex, int64_t keyIndex, int64_t numQueries,
                      int64_t numKeys) const;
  }];
}

#endif // FLASHC_DIALECT_FLASH_IR_FLASHATTRS_TD
