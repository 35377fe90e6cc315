#pragma once
// A small SVG line plot (profile curves, benchmark curves): no plotting library is needed for
// a few polylines with axes, and the output opens in any browser. Where gnuplot is installed
// the same plot can also be drawn as a PNG. Errors: none (png_plot reports false).
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

// The same plot as a PNG drawn by gnuplot, if gnuplot is installed. Returns false (and writes
// nothing) when it is not, or when it fails.
bool png_plot(const PlotSpec& spec, const std::vector<PlotSeries>& series, const std::string& png_path);

}  // namespace vigil::admission
