// sharding/ilp.cpp — see ilp.h. The only file that includes CBC.
#include "sharding/ilp.h"

#ifdef SPMDC_HAVE_CBC
#include <Cbc_C_Interface.h>
#endif

#include <chrono>
#include <memory>

namespace spmd::sharding {

int IlpProblem::add_variable(double obj, double lo, double up, bool is_integer) {
  objective.push_back(obj);
  lower.push_back(lo);
  upper.push_back(up);
  integer.push_back(is_integer);
  return num_variables() - 1;
}

void IlpProblem::add_row(std::vector<std::pair<int, double>> terms, char sense, double rhs) {
  rows.push_back(Row{std::move(terms), sense, rhs});
}

#ifndef SPMDC_HAVE_CBC

bool ilp_solver_available() { return false; }

IlpSolution solve_ilp(const IlpProblem &, double) {
  IlpSolution out;
  out.status = IlpSolution::Status::Unavailable;
  return out;
}

#else

bool ilp_solver_available() { return true; }

IlpSolution solve_ilp(const IlpProblem &p, double time_limit_s) {
  IlpSolution out;
  auto start = std::chrono::steady_clock::now();
  const int n = p.num_variables();
  const int m = static_cast<int>(p.rows.size());
  if (n == 0) {  // nothing to choose
    out.status = IlpSolution::Status::Optimal;
    return out;
  }
  // Compressed sparse columns.
  std::vector<int> count(static_cast<size_t>(n) + 1, 0);
  for (const auto &row : p.rows)
    for (const auto &[var, coef] : row.terms) ++count[static_cast<size_t>(var) + 1];
  std::vector<CoinBigIndex> starts(static_cast<size_t>(n) + 1, 0);
  for (int j = 0; j < n; ++j) starts[j + 1] = starts[j] + count[static_cast<size_t>(j) + 1];
  std::vector<int> index(static_cast<size_t>(starts[n]));
  std::vector<double> value(static_cast<size_t>(starts[n]));
  std::vector<CoinBigIndex> fill(starts.begin(), starts.end() - 1);
  std::vector<double> row_lower(static_cast<size_t>(m)), row_upper(static_cast<size_t>(m));
  for (int r = 0; r < m; ++r) {
    const IlpProblem::Row &row = p.rows[static_cast<size_t>(r)];
    for (const auto &[var, coef] : row.terms) {
      CoinBigIndex k = fill[static_cast<size_t>(var)]++;
      index[static_cast<size_t>(k)] = r;
      value[static_cast<size_t>(k)] = coef;
    }
    constexpr double kInf = 1e300;
    row_lower[static_cast<size_t>(r)] = row.sense == 'L' ? -kInf : row.rhs;
    row_upper[static_cast<size_t>(r)] = row.sense == 'G' ? kInf : row.rhs;
  }
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model *)> model(Cbc_newModel(), Cbc_deleteModel);
  Cbc_loadProblem(model.get(), n, m, starts.data(), index.data(), value.data(), p.lower.data(),
                  p.upper.data(), p.objective.data(), row_lower.data(), row_upper.data());
  for (int j = 0; j < n; ++j)
    if (p.integer[static_cast<size_t>(j)]) Cbc_setInteger(model.get(), j);
  if (!p.start.empty()) {
    std::vector<int> columns;
    std::vector<double> values;
    for (const auto &[var, value] : p.start) {
      columns.push_back(var);
      values.push_back(value);
    }
    Cbc_setMIPStartI(model.get(), static_cast<int>(columns.size()), columns.data(), values.data());
  }
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setMaximumSeconds(model.get(), time_limit_s);
  // The limit is CPU time, as the rest of the search counts it: the same
  // work whatever the machine's load (support/cpu_time.h).
  Cbc_setParameter(model.get(), "timeMode", "cpu");
  Cbc_setParameter(model.get(), "threads", "1");
  // CBC's preprocessing costs more than it saves on these problems (its
  // one-hot rows and marginal equalities are already tight): about 2x faster off.
  Cbc_setParameter(model.get(), "preprocess", "off");
  Cbc_solve(model.get());
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double *best = Cbc_bestSolution(model.get());
  if (Cbc_isProvenInfeasible(model.get())) {
    out.status = IlpSolution::Status::Infeasible;
    return out;
  }
  if (best == nullptr) {
    out.status = IlpSolution::Status::NoSolution;
    return out;
  }
  out.values.assign(best, best + n);
  out.objective = Cbc_getObjValue(model.get());
  out.bound = Cbc_getBestPossibleObjValue(model.get());
  out.status = Cbc_isProvenOptimal(model.get()) ? IlpSolution::Status::Optimal
                                                : IlpSolution::Status::Stopped;
  return out;
}

#endif  // SPMDC_HAVE_CBC

}  // namespace spmd::sharding
