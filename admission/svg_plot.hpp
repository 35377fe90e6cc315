#pragma once
// A small SVG line plot (profile curves, benchmark curves): no plotting library is needed for
// a few polylines with axes, and the output opens in any browser. Errors: none.
#include <string>
#include <vector>

namespace vigil::admission {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;
};

struct PlotSpec {
  std::string title, x_label, y_label;
  bool log_x = false;
};

std::string svg_plot(const PlotSpec& spec, const std::vector<PlotSeries>& series);

}  // namespace vigil::admission
