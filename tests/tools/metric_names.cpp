// Prints what vigild's GET /metrics would answer before anything happened: its Metrics registry
// rendered, where every family has its HELP and TYPE lines even without series. The Grafana
// dashboard check (tests/deploy/check_dashboard.py) takes the exported metric names from it, so
// the names come from the code that registers them, never from a list kept by hand.
#include <iostream>

#include "server/core/vigild_metrics.hpp"

int main() {
  vigil::server::Metrics metrics;
  std::cout << metrics.render();
  return 0;
}
