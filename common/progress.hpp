#pragma once
// Progress for long benchmark runs: percentage, elapsed and ETA on stderr. On a terminal the
// line is redrawn in place; otherwise a line is printed every 10 %.
#include <chrono>
#include <string>

namespace vigil {

class Progress {
 public:
  Progress(std::string label, double total);
  void update(double done);
  void finish();

 private:
  std::string label_;
  double total_;
  int last_decile_ = -1;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace vigil
