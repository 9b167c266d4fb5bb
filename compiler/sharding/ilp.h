// sharding/ilp.h — a small mixed-integer linear program and its solver (CBC).
//
// The automatic sharding search (auto_shard.h) states its problem in these
// terms; solve_ilp hands it to COIN-OR CBC (Debian's coinor-libcbc-dev,
// through its C interface) with a time limit and reads back the best
// solution found, whether it is proven optimal, and the bound. Keeping the
// solver behind this interface keeps CBC out of the rest of the compiler;
// CBC is optional at configure time (compiler/CMakeLists.txt).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace spmd::sharding {

struct IlpProblem {
  struct Row {
    std::vector<std::pair<int, double>> terms;  // (variable, coefficient)
    char sense = 'E';                           // 'L' (<=), 'G' (>=) or 'E' (=)
    double rhs = 0;
  };
  std::vector<double> objective, lower, upper;
  std::vector<bool> integer;
  std::vector<Row> rows;
  /// A known solution to start from (variable, value); variables not named
  /// are completed by the solver. May be empty.
  std::vector<std::pair<int, double>> start;

  /// A new variable with this objective coefficient; returns its index.
  int add_variable(double objective, double lower, double upper, bool integer);
  void add_row(std::vector<std::pair<int, double>> terms, char sense, double rhs);
  int num_variables() const { return static_cast<int>(objective.size()); }
};

struct IlpSolution {
  enum class Status {
    Optimal,      // proven optimal
    Stopped,      // the time limit stopped the search; `values` is the best found
    Infeasible,   // no solution exists
    NoSolution,   // stopped before any solution was found
    Unavailable,  // this spmdc was built without CBC
  } status = Status::NoSolution;
  std::vector<double> values;
  double objective = 0;
  double bound = 0;  // the best possible objective CBC proved
  double seconds = 0;
};

/// Minimises the problem with CBC within `time_limit_s` seconds of CPU time
/// (Status::Unavailable when spmdc was configured without CBC).
IlpSolution solve_ilp(const IlpProblem &problem, double time_limit_s);

/// True when spmdc was built with CBC (SPMDC_HAVE_CBC).
bool ilp_solver_available();

}  // namespace spmd::sharding
