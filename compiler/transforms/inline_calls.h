// transforms/inline_calls.h — replaces every call by a copy of its callee's body.
//
// The transforms (JVP, transposition, simplification) and the backends work
// on flat functions. inline_calls returns a copy of `function` in which each
// `call` instruction is replaced, recursively, by the instructions of the def
// instance it calls, with fresh value ids; values keep their source names
// (prefixed by nothing: the printer makes names unique).
#pragma once

#include "ir/ir.h"

namespace spmd {

ir::Function inline_calls(const ir::Module &module, const ir::Function &function);

}  // namespace spmd
