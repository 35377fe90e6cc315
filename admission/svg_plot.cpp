#include "admission/svg_plot.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <cmath>
#include <cstdio>
#include <limits>

namespace vigil::admission {
namespace {

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

}  // namespace

std::string svg_plot(const PlotSpec& spec, const std::vector<PlotSeries>& series) {
  constexpr double W = 720, H = 420, L = 80, R = 170, Tm = 40, B = 60;
  double x0 = std::numeric_limits<double>::max(), x1 = -x0, y1 = 0;
  auto fx = [&](double x) { return spec.log_x ? std::log10(std::max(x, 1e-12)) : x; };
  for (const auto& s : series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      x0 = std::min(x0, fx(s.x[i]));
      x1 = std::max(x1, fx(s.x[i]));
      y1 = std::max(y1, s.y[i]);
    }
  }
  if (!(x1 > x0)) x1 = x0 + 1;
  if (!(y1 > 0)) y1 = 1;
  y1 *= 1.05;
  auto px = [&](double x) { return L + (fx(x) - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return H - B - y / y1 * (H - Tm - B); };
  static const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
  std::string out =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"420\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"720\" height=\"420\" fill=\"white\"/>\n";
  out += "<text x=\"360\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" + esc(spec.title) + "</text>\n";
  out += "<line x1=\"" + num(L) + "\" y1=\"" + num(H - B) + "\" x2=\"" + num(W - R) + "\" y2=\"" + num(H - B) +
         "\" stroke=\"black\"/>\n<line x1=\"" + num(L) + "\" y1=\"" + num(Tm) + "\" x2=\"" + num(L) + "\" y2=\"" +
         num(H - B) + "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double yv = y1 * i / 5, xv = x0 + (x1 - x0) * i / 5;
    out += "<text x=\"" + num(L - 6) + "\" y=\"" + num(py(yv) + 4) + "\" text-anchor=\"end\">" + num(yv) + "</text>\n";
    const double shown = spec.log_x ? std::pow(10, xv) : xv;
    out += "<text x=\"" + num(L + (xv - x0) / (x1 - x0) * (W - L - R)) + "\" y=\"" + num(H - B + 18) +
           "\" text-anchor=\"middle\">" + num(shown) + "</text>\n";
  }
  out += "<text x=\"" + num((L + W - R) / 2) + "\" y=\"" + num(H - 18) + "\" text-anchor=\"middle\">" +
         esc(spec.x_label) + "</text>\n";
  out += "<text transform=\"translate(18," + num((Tm + H - B) / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         esc(spec.y_label) + "</text>\n";
  for (std::size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const char* c = colors[k % 6];
    std::string pts;
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) pts += num(px(s.x[i])) + "," + num(py(s.y[i])) + " ";
    out += "<polyline fill=\"none\" stroke=\"" + std::string(c) + "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
    out += "<text x=\"" + num(W - R + 10) + "\" y=\"" + num(Tm + 16 + 18 * static_cast<double>(k)) + "\" fill=\"" + c +
           "\">" + esc(s.name) + "</text>\n";
  }
  out += "</svg>\n";
  return out;
}

namespace {

// gnuplot's string literals: single quotes, with '' for a quote.
std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

bool png_plot(const PlotSpec& spec, const std::vector<PlotSeries>& series, const std::string& png_path) {
  const std::string script_path = png_path + ".gp";
  {
    std::ofstream gp(script_path);
    gp << "set terminal pngcairo size 900,520 noenhanced\n"
       << "set output " << gp_quote(png_path) << "\n"
       << "set title " << gp_quote(spec.title) << "\n"
       << "set xlabel " << gp_quote(spec.x_label) << "\nset ylabel " << gp_quote(spec.y_label) << "\n"
       << "set grid\nset key outside right\n"
       << (spec.log_x ? "set logscale x 2\n" : "");
    for (std::size_t k = 0; k < series.size(); ++k) {
      gp << "$d" << k << " << EOD\n";
      for (std::size_t i = 0; i < series[k].x.size() && i < series[k].y.size(); ++i) {
        gp << num(series[k].x[i]) << " " << num(series[k].y[i]) << "\n";
      }
      gp << "EOD\n";
    }
    gp << "plot ";
    for (std::size_t k = 0; k < series.size(); ++k) {
      gp << (k ? ", " : "") << "$d" << k << " with linespoints title " << gp_quote(series[k].name);
    }
    gp << "\n";
    if (!gp) return false;
  }
  // No shell: the paths are passed as they are.
  pid_t pid = 0;
  char* argv[] = {const_cast<char*>("gnuplot"), const_cast<char*>(script_path.c_str()), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  const int rc = posix_spawnp(&pid, "gnuplot", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  bool ok = false;
  if (rc == 0) {
    int status = 0;
    ok = ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  ::unlink(script_path.c_str());
  if (!ok) ::unlink(png_path.c_str());
  return ok;
}

}  // namespace vigil::admission
