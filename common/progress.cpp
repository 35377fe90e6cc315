#include "common/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace vigil {

Progress::Progress(std::string label, double total)
    : label_(std::move(label)),
      total_(total > 0 ? total : 1),
      tty_(::isatty(STDERR_FILENO)),
      start_(std::chrono::steady_clock::now()) {}

void Progress::update(double done) {
  double frac = done / total_;
  if (frac > 1) frac = 1;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double eta = frac > 0 ? elapsed * (1 - frac) / frac : 0;
  int decile = static_cast<int>(frac * 10);
  if (tty_) {
    std::fprintf(stderr, "\r%s: %3.0f%%  elapsed %.0fs  ETA %.0fs   ", label_.c_str(), frac * 100, elapsed, eta);
  } else if (decile != last_decile_) {
    std::fprintf(stderr, "%s: %3.0f%%  elapsed %.0fs  ETA %.0fs\n", label_.c_str(), frac * 100, elapsed, eta);
  }
  last_decile_ = decile;
}

void Progress::finish() {
  update(total_);
  if (tty_) std::fputc('\n', stderr);
}

}  // namespace vigil
