#include "tests/support/media_fixture.hpp"

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <thread>

#include "tests/support/vigild_process.hpp"

namespace vigil::test {

std::filesystem::path make_h264_clip(const std::filesystem::path& dir, int seconds, const std::string& size,
                                     const std::string& name) {
  const auto clip = dir / name;
  REQUIRE(run_to_exit("/usr/bin/ffmpeg",
                      {"-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=" + size + ":rate=25", "-t",
                       std::to_string(seconds), "-c:v", "libx264", "-g", "25", "-bf", "0", "-pix_fmt", "yuv420p",
                       clip.string()},
                      dir / "ffmpeg.log")
              .status == 0);
  return clip;
}

std::filesystem::path make_hevc_clip(const std::filesystem::path& dir, int seconds, int bframes,
                                     const std::string& size, const std::string& name) {
  const auto clip = dir / name;
  // keyint = min-keyint and no scenecut: exactly one keyframe per second, so tests can count them.
  REQUIRE(run_to_exit("/usr/bin/ffmpeg",
                      {"-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=" + size + ":rate=25", "-t",
                       std::to_string(seconds), "-c:v", "libx265", "-x265-params",
                       "bframes=" + std::to_string(bframes) + ":keyint=25:min-keyint=25:scenecut=0:log-level=error",
                       "-tag:v", "hvc1", "-pix_fmt", "yuv420p", clip.string()},
                      dir / "ffmpeg.log")
              .status == 0);
  return clip;
}

std::filesystem::path make_sim_profile(const std::filesystem::path& dir) {
  const auto profile = dir / "wd.json";
  REQUIRE(run_to_exit(VIGIL_CLI_PATH, {"profile", "sim:wd400bb", "--quick", "-o", profile.string()}, dir / "p.log")
              .status == 0);
  return profile;
}

std::int64_t wait_for_closed_frames(const std::filesystem::path& data, std::int64_t frames) {
  pqxx::connection c("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  std::int64_t have = 0, start_us = 0;
  for (int i = 0; i < 200 && have < frames; ++i) {
    pqxx::work tx(c);
    const auto row = tx.exec1(
        "SELECT COALESCE(sum(frame_count), 0), COALESCE(min(start_us), 0) FROM segments "
        "WHERE state = 'closed'");
    have = row[0].as<std::int64_t>();
    start_us = row[1].as<std::int64_t>();
    if (have < frames) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(have == frames);
  return start_us;
}

std::vector<std::string> sim_volume_args(const std::filesystem::path& dir, const std::filesystem::path& profile,
                                         int volume_mb, bool pull_cameras) {
  std::vector<std::string> args{"--volume",
                                (dir / "vol").string(),
                                "--volume-size",
                                std::to_string(static_cast<std::int64_t>(volume_mb) << 20),
                                "--extent-bytes",
                                std::to_string(4 << 20),
                                "--profile",
                                profile.string(),
                                "--cycle-ms",
                                "200",
                                "--model-check-cycles",
                                "0"};
  if (!pull_cameras) args.push_back("--no-camera-pull");
  // Playbacks may use the whole budget of this slow simulated disk (16x of a camera is over the
  // default quarter at 200 ms cycles); the playback share has tests of its own.
  args.insert(args.end(), {"--playback-share", "1"});
  return args;
}

// ffprobe's packet list of FILE (size, key flag, pts in seconds).
std::vector<ProbedPacket> probe_packets(const std::filesystem::path& file, const std::filesystem::path& dir) {
  const auto out = dir / (file.filename().string() + ".packets");
  auto r = run_to_exit("/usr/bin/ffprobe",
                       {"-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,size,flags", "-of",
                        "csv=p=0", "-o", out.string(), file.string()},
                       dir / "ffprobe.log");
  REQUIRE(r.status == 0);
  std::vector<ProbedPacket> packets;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::stringstream ss(line);
    std::string pts, size, flags;
    std::getline(ss, pts, ',');
    std::getline(ss, size, ',');
    std::getline(ss, flags, ',');
    packets.push_back({std::stoll(size), flags.find('K') != std::string::npos, pts == "N/A" ? -1 : std::stod(pts)});
  }
  return packets;
}

std::string probe_stream(const std::filesystem::path& file, const std::filesystem::path& dir) {
  const auto out = dir / (file.filename().string() + ".stream");
  auto r = run_to_exit("/usr/bin/ffprobe",
                       {"-v", "error", "-select_streams", "v:0", "-show_entries",
                        "stream=codec_name,width,height:format=duration", "-of", "default=nw=1", "-o", out.string(),
                        file.string()},
                       dir / "ffprobe.log");
  REQUIRE(r.status == 0);
  std::ifstream in(out);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

double probe_field(const std::string& text, const std::string& key) {
  const auto at = text.find(key + "=");
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + key.size() + 1));
}

RecordedCamera recorded_camera(const std::filesystem::path& dir, const std::string& name, int seconds) {
  RecordedCamera r;
  r.clip = make_h264_clip(dir, seconds);
  r.source = probe_packets(r.clip, dir);
  REQUIRE(r.source.size() == static_cast<std::size_t>(25 * seconds));
  const auto profile = make_sim_profile(dir);
  r.data = dir / "data";
  r.vigild = std::make_unique<VigildProcess>(r.data, sim_volume_args(dir, profile));
  REQUIRE(r.vigild->wait_ready());
  auto rec =
      run_to_exit(VIGIL_CLI_PATH, {"--server", r.vigild->wire(), "record", "--stream", name, r.clip.string(), "--fast"},
                  dir / "rec.log");
  INFO(rec.output);
  REQUIRE(rec.status == 0);
  wait_for_closed_frames(r.data, 25 * seconds);
  return r;
}

}  // namespace vigil::test
