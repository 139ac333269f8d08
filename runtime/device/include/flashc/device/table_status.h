// The verdict of a program's on-device table check, int32 status[4]: a code, then three values it explains. One
// list for the kernels that write it (attention_decode.cuh, kv_append.cuh, varlen.cuh), the CPU tile executor that
// mirrors them and the runtime that names each code in its error. Plain C++: host code includes it too.
#pragma once

namespace flashc {
namespace device {

enum TableStatus : int {
  kTableOk = 0,
  // A KV cache's lengths and block table (decode, append): status = (code, sequence, index, value).
  kSeqlenNegative = 1,      // cache_seqlens[sequence] = value < 0
  kSeqlenOverCapacity = 2,  // cache_seqlens[sequence] = value > the capacity (index: the capacity)
  kPageOutOfRange = 3,      // block_table[sequence][index] = value is not a page id, and the sequence uses it
  // Packed sequences' offsets (varlen): status = (code, index, tensor: 0 cu_seqlens_q / 1 cu_seqlens_k, value).
  kOffsetsDecrease = 4,     // cu[index] < cu[index - 1]: sequence index - 1 would have a negative length
  kOffsetPastRows = 5,      // cu[index] > the packed tensor's rows
  kFirstOffsetNegative = 6, // cu[0] < 0
  // An append's lengths (decode's fields): they count its T new tokens.
  kSeqlenBelowNew = 7,      // cache_seqlens[sequence] = value < T (index: T)
};

}  // namespace device
}  // namespace flashc
