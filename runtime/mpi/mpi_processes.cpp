// runtime/mpi/mpi_processes.cpp — the processes of an MPI job (spmdrt/mpi.h).
//
// MPI is initialised once per process (MPI_THREAD_FUNNELED: only the main
// thread calls MPI; OpenBLAS threads never do) and finalised when the last
// MpiProcesses goes away. The collective steps of program_main are small
// gathers and broadcasts on MPI_COMM_WORLD; the default error handler
// (MPI_ERRORS_ARE_FATAL) ends the job on a communication failure, and the
// launcher ends it when a process dies.
#include <mpi.h>

#include <algorithm>
#include <cstdint>

#include "spmdrt/mpi.h"

namespace spmd::rt {
namespace {

void check_mpi(int status, const char *what) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw RuntimeError(std::string(what) + " failed: " + std::string(text, length));
}

class MpiProcessesImpl final : public MpiProcesses {
 public:
  MpiProcessesImpl() {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      int provided = 0;
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided),
                "MPI_Init_thread");
      owns_mpi_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type");
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_size(node, &local_size_);
    MPI_Comm_free(&node);
  }
  ~MpiProcessesImpl() override {
    if (owns_mpi_) MPI_Finalize();
  }
  MpiProcessesImpl(const MpiProcessesImpl &) = delete;
  MpiProcessesImpl &operator=(const MpiProcessesImpl &) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  Agreement agree(const std::string &error) override {
    const std::vector<std::string> errors = gather(error);
    int failed = 0;
    Agreement out;
    if (rank_ == 0) {
      const auto first = std::find_if(errors.begin(), errors.end(),
                                      [](const std::string &e) { return !e.empty(); });
      if (first != errors.end()) {
        failed = 1;
        // Every process failing alike: the message alone; otherwise say which rank.
        const bool alike = std::all_of(errors.begin(), errors.end(),
                                       [&](const std::string &e) { return e == *first; });
        out.message = alike ? *first
                            : "rank " + std::to_string(first - errors.begin()) + " of " +
                                  std::to_string(size_) + ": " + *first;
      }
    }
    check_mpi(MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    out.failed = failed != 0;
    return out;
  }

  std::vector<std::string> gather(const std::string &bytes) override {
    if (bytes.size() > static_cast<size_t>(INT32_MAX))
      throw RuntimeError("more than 2 GiB to gather on rank 0");
    const int length = static_cast<int>(bytes.size());
    std::vector<int> lengths(rank_ == 0 ? static_cast<size_t>(size_) : 0);
    check_mpi(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD),
              "MPI_Gather");
    std::vector<int> offsets(lengths.size(), 0);
    int64_t total = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      if (total > INT32_MAX) throw RuntimeError("more than 2 GiB to gather on rank 0");
      offsets[r] = static_cast<int>(total);
      total += lengths[r];
    }
    std::string all(static_cast<size_t>(total), '\0');
    check_mpi(MPI_Gatherv(bytes.data(), length, MPI_BYTE, all.data(), lengths.data(),
                          offsets.data(), MPI_BYTE, 0, MPI_COMM_WORLD),
              "MPI_Gatherv");
    std::vector<std::string> out;
    for (size_t r = 0; r < lengths.size(); ++r)
      out.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
    return out;
  }

  void broadcast(std::string &bytes) override {
    uint64_t length = bytes.size();
    check_mpi(MPI_Bcast(&length, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
    if (length > static_cast<uint64_t>(INT32_MAX))
      throw RuntimeError("more than 2 GiB to broadcast");
    bytes.resize(length);
    check_mpi(MPI_Bcast(bytes.data(), static_cast<int>(length), MPI_BYTE, 0, MPI_COMM_WORLD),
              "MPI_Bcast");
  }

  double max(double value) override {
    double out = value;
    check_mpi(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return out;
  }

  [[noreturn]] void abort(int status) override {
    MPI_Abort(MPI_COMM_WORLD, status);
    std::_Exit(status);  // MPI_Abort does not return; in case it does
  }

 private:
  bool owns_mpi_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

}  // namespace

bool mpi_available() { return true; }

std::unique_ptr<MpiProcesses> start_mpi_processes() { return std::make_unique<MpiProcessesImpl>(); }

}  // namespace spmd::rt
