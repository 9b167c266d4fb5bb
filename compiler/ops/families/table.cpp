// ops/families/table.cpp — the one table of the ops layer: every op's rules.
//
// An exhaustive switch over OpCode (no default): an op added to ops.def does
// not compile until it is registered here with the rules of its family file.
#include <stdexcept>
#include <string>

#include "ops/families/families.h"

namespace spmd {

const OpRules &op_rules(OpCode op) {
  using namespace families;
  switch (op) {
    // creation.cpp
    case OpCode::Constant:
    case OpCode::Full:
    case OpCode::Iota:
      return kCreation;
      // elementwise.cpp
#define UNARY_MATH(Name, spelling, kernel, scalar_fn, Domain, Linearity) case OpCode::Name:
#include "spmdrt/unary_math.def"
      return kUnaryMath;
    case OpCode::Cast:
      return kCast;
    case OpCode::StopGradient:
      return kStopGradient;
#define BINARY_MATH(Name, spelling, kernel, scalar_fn, Kind, symbol, BoolOk, Linearity) \
  case OpCode::Name:
#include "spmdrt/binary_math.def"
      return kBinaryMath;
    case OpCode::Select:
      return kSelect;
    // reductions.cpp
    case OpCode::ReduceSum:
    case OpCode::ReduceMax:
    case OpCode::ReduceMin:
    case OpCode::ArgMax:
    case OpCode::ArgMin:
      return kReduction;
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
    case OpCode::ScatterAdd:
      return kGather;
    // collectives.cpp
    case OpCode::Psum:
    case OpCode::Pmax:
    case OpCode::Pmin:
      return kAllReduce;
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
      return kRandomKey;
    case OpCode::RandomFoldIn:
      return kRandomFoldIn;
    case OpCode::KeyData:
      return kKeyData;
    case OpCode::RandomSplit:
      return kRandomSplit;
    case OpCode::RandomBits:
      return kRandomBits;
    case OpCode::RandomUniform:
      return kRandomUniform;
    case OpCode::RandomNormal:
      return kRandomNormal;
    case OpCode::RandomInt:
      return kRandomInt;
    // control.cpp
    case OpCode::Call:
      return kCall;
    case OpCode::For:
      return kFor;
    // print.cpp
    case OpCode::DebugPrint:
      return kPrint;
  }
  throw std::logic_error("op_rules: op code " + std::to_string(static_cast<int>(op)) +
                         " is not in ops.def");
}

}  // namespace spmd
