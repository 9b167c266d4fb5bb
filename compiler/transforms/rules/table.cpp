// transforms/rules/table.cpp — the one table of the transforms layer: every
// op's JVP and transpose rules.
//
// An exhaustive switch over OpCode (no default): an op added to ops.def does
// not compile until it is registered here with its family file's value; a
// math row of spmdrt/unary_math.def or binary_math.def is registered as
// derivatives::k<Name>, so a row without its value does not link.
#include <stdexcept>
#include <string>

#include "transforms/rules/rules.h"

namespace spmd {

const DerivativeRules &derivative_rules(OpCode op) {
  using namespace derivatives;
  switch (op) {
    // creation.cpp
    case OpCode::Constant:
    case OpCode::Full:
    case OpCode::Iota:
      return kCreation;
      // elementwise.cpp
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) \
  case OpCode::Name:                                                     \
    return k##Name;
#include "spmdrt/unary_math.def"
    case OpCode::Cast:
      return kCast;
    case OpCode::StopGradient:
      return kStopGradient;
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  case OpCode::Name:                                                                    \
    return k##Name;
#include "spmdrt/binary_math.def"
    case OpCode::Select:
      return kSelect;
    // reductions.cpp
    case OpCode::ReduceSum:
      return kReduceSum;
    case OpCode::ReduceMax:
    case OpCode::ReduceMin:
      return kReduceExtreme;
    case OpCode::ArgMax:
    case OpCode::ArgMin:
      return kArgExtreme;
    // contractions.cpp
    case OpCode::Einsum:
      return kEinsum;
    // layout.cpp
    case OpCode::Reshape:
      return kReshape;
    case OpCode::Transpose:
      return kTranspose;
    case OpCode::Reverse:
      return kReverse;
    case OpCode::BroadcastTo:
      return kBroadcastTo;
    case OpCode::Slice:
      return kSlice;
    case OpCode::Pad:
      return kPad;
    case OpCode::Concat:
      return kConcat;
    case OpCode::DynamicSlice:
      return kDynamicSlice;
    case OpCode::DynamicUpdateSlice:
      return kDynamicUpdateSlice;
    case OpCode::Constrain:
      return kConstrain;
    // gather.cpp
    case OpCode::Take:
      return kTake;
    case OpCode::ScatterAdd:
      return kScatterAdd;
    // collectives.cpp
    case OpCode::Psum:
      return kPsum;
    case OpCode::Pmax:
    case OpCode::Pmin:
      return kPextreme;
    case OpCode::Pbroadcast:
      return kPbroadcast;
    case OpCode::AllGather:
      return kAllGather;
    case OpCode::AllGatherInvariant:
      return kAllGatherInvariant;
    case OpCode::PsumScatter:
      return kPsumScatter;
    case OpCode::Pscatter:
      return kPscatter;
    case OpCode::AllToAll:
      return kAllToAll;
    case OpCode::Ppermute:
      return kPpermute;
    case OpCode::AxisIndex:
      return kAxisIndex;
    // random.cpp
    case OpCode::RandomKey:
    case OpCode::RandomFoldIn:
    case OpCode::KeyData:
    case OpCode::RandomSplit:
    case OpCode::RandomBits:
    case OpCode::RandomUniform:
    case OpCode::RandomNormal:
    case OpCode::RandomInt:
      return kRandom;
    // control.cpp
    case OpCode::Call:
    case OpCode::For:
      return kCallOrLoop;
    // print.cpp
    case OpCode::DebugPrint:
      return kPrint;
  }
  throw std::logic_error("derivative_rules: op code " + std::to_string(static_cast<int>(op)) +
                         " is not in ops.def");
}

}  // namespace spmd
