//===- ScheduleDefaults.h - schedule defaults shared by passes and the target model -*- C++ -*-===//
//
// Numbers that both a pass option's default (Passes.td) and the target model's tuning spaces name, kept in one
// place: the pass options' TableGen defaults refer to these constants.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_SCHEDULEDEFAULTS_H
#define FLASHC_COMPILER_SCHEDULEDEFAULTS_H

#include <cstdint>

namespace flashc {

/// The warp-specialised attention backward's (head, batch) pairs a group of its grid where key blocks differ in work
/// (flash-order-blocks' `head-groups` default, the hand rule; 1, the launch order, elsewhere). The tuning space's
/// `group` field offers kWsBackwardHeadGroupChoices.
inline constexpr int64_t kWsBackwardHeadGroups = 4;
inline constexpr int64_t kWsBackwardHeadGroupChoices[] = {1, 4, 8};

} // namespace flashc

#endif // FLASHC_COMPILER_SCHEDULEDEFAULTS_H
