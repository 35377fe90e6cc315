#include "client/tools/profile_command.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <pqxx/pqxx>
#include <sstream>

#include "admission/admission.hpp"
#include "admission/profiler.hpp"
#include "admission/svg_plot.hpp"
#include "common/command_line.hpp"
#include "common/exit_codes.hpp"
#include "common/progress.hpp"
#include "catalog/profiles.hpp"
#include "storage/file_device.hpp"
#include "storage/hdd_model.hpp"

namespace fs = std::filesystem;

namespace po = boost::program_options;

namespace vigil::client {
namespace {

constexpr CommandHelp kHelp{
    "vigil profile",
    "Usage: vigil profile TARGET [options]      measure a disk (destroys data in TARGET's region)\n"
    "       vigil profile show FILE [--rate-mbps R] [--r-rt F]\n\n"
    "TARGET: a file (created with --size if missing, removed afterwards), a block device, or sim:PRESET\n"
    "(a simulated hard disk: st318437lw, st39102lw, wd400bb, hp_c2247; measured in virtual time).\n",
    "\nshow prints the derived parameters: chunk size (smallest size within 5 % of peak), the optimal\n"
    "range [a, b], and how many streams of --rate-mbps (default 4) fit per policy and cycle length.\n"
    "Exit: 0 ok, 1 failed, 2 usage, 3 refused (TARGET holds data; see --force).\n"};
constexpr CommandHelp kShowHelp{
    "vigil profile show",
    "Usage: vigil profile show FILE [--rate-mbps R] [--r-rt F]\n\n"
    "Prints a profile's derived parameters: chunk size (smallest size within 5 % of peak), the optimal\n"
    "range [a, b], and how many streams of R Mbit/s fit per policy and cycle length.\n",
    "\nExit: 0 ok, 1 failed, 2 usage.\n"};

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What TARGET already holds, if it looks like data: a Vigil volume or a filesystem.
std::string existing_data(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::vector<unsigned char> head(70 * 1024, 0);
  const ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  ::close(fd);
  if (n <= 0) return {};
  auto at = [&](std::size_t off, const char* magic, std::size_t len) {
    return static_cast<std::size_t>(n) >= off + len && std::memcmp(head.data() + off, magic, len) == 0;
  };
  if (at(0, "VIGILVOL", 8)) return "a Vigil volume";
  if (static_cast<std::size_t>(n) > 1081 && head[1080] == 0x53 && head[1081] == 0xEF) return "an ext2/3/4 filesystem";
  if (at(0, "XFSB", 4)) return "an XFS filesystem";
  if (at(65600, "_BHRfS_M", 8)) return "a btrfs filesystem";
  return {};
}

void print_show(const admission::DiskProfile& p, Rate rate, double r_rt) {
  auto mb = [](double b) { return b / 1e6; };
  std::cout << "device            " << p.device << (p.quick ? "  (quick profile)" : "") << "\n"
            << "peak sequential   " << mb(p.peak_rate().Bps()) << " MB/s\n"
            << "read  range [a,b] " << p.read_range.a / 1024 << " .. " << p.read_range.b / 1024 << " KiB\n"
            << "write range [a,b] " << p.write_range.a / 1024 << " .. " << p.write_range.b / 1024 << " KiB\n"
            << "chunk size        " << p.chunk_bytes() / 1024 << " KiB (smallest size within 5 % of peak)\n"
            << "command overhead  " << p.command_overhead_s * 1e6 << " us\n"
            << "random access     mean " << p.access_mean_s * 1e3 << " ms, max " << p.access_max_s * 1e3 << " ms\n"
            << "jitter            p50 " << p.jitter_p50_s * 1e6 << " us, p99 " << p.jitter_p99_s * 1e6 << " us\n"
            << "IO spread / cycle " << p.cycle_io_sd_s * 1e3
            << " ms per stream IO (sd; the statistical policy's margin)\n";
  if (!p.sustained_write.empty()) {
    const auto [lo, hi] = std::minmax_element(p.sustained_write.begin(), p.sustained_write.end());
    std::cout << "sustained write   " << mb(*lo) << " .. " << mb(*hi) << " MB/s over " << p.sustained_write.size()
              << " s\n";
  }
  std::cout << "\nstreams of " << rate.bps() / 1e6 << " Mbit/s (recording) that fit, r_RT = " << r_rt << ":\n"
            << "  cycle     analytic   adm1   adm2   memory/stream\n";
  std::size_t best = 0;
  std::vector<std::pair<double, std::size_t>> rows;
  for (double T : {0.5, 1.0, 2.0, 4.0}) {
    std::cout << "  " << T << " s";
    std::size_t adm1 = 0;
    for (auto pol : {admission::Policy::analytic, admission::Policy::conservative, admission::Policy::aggressive}) {
      admission::AdmissionController a(p, {.policy = pol, .cycle_s = T, .r_rt = r_rt});
      const std::size_t n = a.max_streams({.write = true, .peak_rate = rate});
      if (pol == admission::Policy::conservative) adm1 = n;
      std::cout << "\t" << n;
    }
    std::cout << "\t" << 2 * rate.bytes_over(T) / 1e6 << " MB\n";
    rows.emplace_back(T, adm1);
    best = std::max(best, adm1);
  }
  // The shortest cycle that gets 90 % of what the longest one admits: longer cycles buy little
  // more and cost memory (2·T·BR per stream) and start latency.
  for (auto [T, n] : rows) {
    if (n >= 0.9 * static_cast<double>(best)) {
      std::cout << "recommended cycle " << T << " s (conservative policy: " << n << " streams)\n";
      break;
    }
  }
}

int show_main(const std::vector<std::string>& args) {
  double rate_mbps = 4, r_rt = 0.9;
  po::options_description options("Options");
  options.add_options()                                                                                           //
      ("rate-mbps", po::value(&rate_mbps)->value_name("R")->default_value(rate_mbps), "a stream's rate, Mbit/s")  //
      ("r-rt", po::value(&r_rt)->value_name("F")->default_value(r_rt), "the share of a cycle for streams");
  std::vector<std::string> words;
  if (auto rc = parse_command_line(args, options, kShowHelp, &words, 1)) return *rc;
  if (words.empty()) return usage_error(kShowHelp, "FILE is required");
  const std::string& file = words.front();
  std::ifstream in(file);
  if (!in) {
    std::cerr << "vigil profile show: cannot read " << file << "\n";
    return exit_code::kFailed;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    print_show(admission::profile_from_json(boost::json::parse(ss.str())), Rate::from_bps(rate_mbps * 1e6), r_rt);
  } catch (const std::exception& e) {
    std::cerr << "vigil profile show: " << file << ": " << e.what() << "\n";
    return exit_code::kFailed;
  }
  return exit_code::kOk;
}

// Returns whether PNGs were drawn as well.
bool write_svgs(const admission::DiskProfile& p, const fs::path& dir) {
  fs::create_directories(dir);
  auto mbs = [](std::vector<double> v) {
    for (auto& x : v) x /= 1e6;
    return v;
  };
  auto kib = [](std::vector<double> v) {
    for (auto& x : v) x /= 1024;
    return v;
  };
  const auto& rr = p.random_read;
  const auto& rw = p.random_write;
  const admission::PlotSpec adm{"Admission curve P(S): cycles of same-size IOs at spread offsets (" + p.device + ")",
                                "IO size (KiB)", "MB/s", true};
  const std::vector<admission::PlotSeries> adm_series{{"read min", kib(rr.sizes), mbs(rr.min)},
                                                      {"read mean", kib(rr.sizes), mbs(rr.mean)},
                                                      {"write min", kib(rw.sizes), mbs(rw.min)},
                                                      {"write mean", kib(rw.sizes), mbs(rw.mean)}};
  const admission::PlotSpec seq{"Sequential throughput vs chunk size, queue depth 1 (" + p.device + ")", "chunk (KiB)",
                                "MB/s", true};
  const std::vector<admission::PlotSeries> seq_series{{"read", kib(p.seq_read.sizes), mbs(p.seq_read.mean)},
                                                      {"write", kib(p.seq_write.sizes), mbs(p.seq_write.mean)}};
  std::ofstream(dir / "admission-curve.svg") << admission::svg_plot(adm, adm_series);
  std::ofstream(dir / "chunk-curve.svg") << admission::svg_plot(seq, seq_series);
  // PNG too where gnuplot is installed.
  return admission::png_plot(adm, adm_series, (dir / "admission-curve.png").string()) &&
         admission::png_plot(seq, seq_series, (dir / "chunk-curve.png").string());
}

}  // namespace

int profile_main(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "show") return show_main({args.begin() + 1, args.end()});
  std::string out = "vigil-profile.json", svg_dir, db;
  std::int64_t size = 1ll << 30;  // signed, so that a negative size is refused rather than wrapped around
  bool quick = false, full = false, force = false;
  po::options_description options("Options");
  options.add_options()                                                                                         //
      ("quick", po::bool_switch(&quick), "under a minute: fewer sizes and repetitions")                         //
      ("full", po::bool_switch(&full), "add a sustained-write run (60 s) that catches write-cache cliffs")      //
      ("size", po::value(&size)->value_name("BYTES"), "size of a file TARGET to create (default 1 GiB)")        //
      ("force", po::bool_switch(&force), "profile a device or file that holds a filesystem or a Vigil volume")  //
      (",o", po::value(&out)->value_name("FILE")->default_value(out), "where to write the profile JSON")        //
      ("svg", po::value(&svg_dir)->value_name("DIR"),
       "also draw the curves as SVG (and PNG, where gnuplot is installed) in DIR")  //
      ("db", po::value(&db)->value_name("URL"), "store the profile in the catalog at URL (as vigild --db)");
  std::vector<std::string> words;
  if (auto rc = parse_command_line(args, options, kHelp, &words, 1)) return *rc;
  if (words.empty()) return usage_error(kHelp, "TARGET is required");
  if (size <= 0) return usage_error(kHelp, "--size must be a positive byte count");
  const std::string& target = words.front();

  admission::DiskProfile profile;
  Progress progress("profile " + target, 1.0);
  auto on_progress = [&](double f, const std::string&) { progress.update(f); };
  try {
    if (target.rfind("sim:", 0) == 0) {
      storage::SimulatedHdd hdd(storage::hdd_preset(target.substr(4)));
      profile = admission::profile_device(*hdd.disk, hdd.clock, {.quick = quick, .full = full}, on_progress);
      profile.device = target;
    } else {
      const fs::path path = target;
      const bool existed = fs::exists(path);
      if (existed && !force) {
        if (auto what = existing_data(path); !what.empty()) {
          std::cerr << "vigil profile: " << target << " holds " << what
                    << "; profiling writes over it. Use --force to profile it anyway.\n";
          return exit_code::kUnreachable;  // TARGET holds data: refused without --force
        }
      }
      struct RemoveCreated {
        fs::path p;
        bool armed;
        ~RemoveCreated() {
          std::error_code ec;
          if (armed) fs::remove(p, ec);
        }
      } cleanup{path, !existed};
      auto dev = storage::FileDevice::open(path, {.create_bytes = existed ? 0 : static_cast<std::uint64_t>(size),
                                                  .exclusive = true});
      if (!dev) {
        std::cerr << "vigil profile: cannot open " << target << ": " << dev.error().message() << "\n";
        return exit_code::kFailed;
      }
      storage::SteadyClock clock;
      profile =
          admission::profile_device(**dev, clock, {.quick = quick, .full = full, .prefill = !existed}, on_progress);
      profile.device = fs::absolute(path).string();
    }
  } catch (const std::exception& e) {
    std::cerr << "\nvigil profile: " << e.what() << "\n";
    return exit_code::kFailed;
  }
  progress.finish();
  profile.measured_at_us = now_us();
  profile.tool_version = VIGIL_VERSION;
  {
    std::ofstream f(out);
    f << boost::json::serialize(admission::to_json(profile)) << "\n";
    if (!f) {
      std::cerr << "vigil profile: cannot write " << out << "\n";
      return exit_code::kFailed;
    }
  }
  std::cout << "profile written to " << out << "\n\n";
  if (!svg_dir.empty()) {
    const bool png = write_svgs(profile, svg_dir);
    std::cout << "curves drawn in " << svg_dir << "/admission-curve.svg and chunk-curve.svg"
              << (png ? " (and .png)" : " (no PNG: gnuplot is not installed)") << "\n\n";
  }
  if (!db.empty()) {
    try {
      pqxx::connection conn(db);
      pqxx::work tx(conn);
      char host[256] = "localhost";
      ::gethostname(host, sizeof host - 1);
      const auto id = catalog::store_profile(tx, profile, host);
      tx.commit();
      std::cout << "stored in the catalog as disk profile " << id << "\n\n";
    } catch (const std::exception& e) {
      std::cerr << "vigil profile: storing in the catalog failed: " << e.what() << "\n";
      return exit_code::kFailed;
    }
  }
  print_show(profile, Rate::from_bps(4e6), 0.9);
  return exit_code::kOk;
}

}  // namespace vigil::client
