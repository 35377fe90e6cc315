// The archive tier on a running vigild (docs/archive.md): closed segments are copied to a real
// S3 server (SeaweedFS on loopback) in the disks' background time, and each copy recorded in
// segment_copies is byte for byte the segment's logical bytes on the volume — read here straight
// from the volume file at the catalog's extents. (Multipart uploads, for segments over 16 MiB, are
// checked against SeaweedFS in tests/archive/s3/.)
// An evidence lock puts the copies it covers under S3 legal hold until it is released. While the
// store is down nothing is recorded as copied, and once it is back every segment is.
// Skipped, saying so, when SeaweedFS is not built (deploy/seaweedfs.sh). Label "s3".
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <filesystem>
#include <pqxx/pqxx>
#include <string>

#include "archive/s3_request.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/seaweedfs_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;

namespace {

// Segment SEGMENT_ID's logical bytes [0, data_bytes) as they lie on VOLUME.
std::string segment_bytes_on_volume(pqxx::connection& c, const std::filesystem::path& volume, std::int64_t segment_id) {
  pqxx::nontransaction q(c);
  const auto data_bytes =
      q.exec1("SELECT data_bytes FROM segments WHERE id = " + std::to_string(segment_id))[0].as<std::uint64_t>();
  const auto extents = q.exec("SELECT volume_offset_bytes, length_bytes FROM segment_extents WHERE segment_id = " +
                              std::to_string(segment_id) + " ORDER BY ordinal");
  std::string out;
  const int fd = ::open(volume.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  for (const auto& e : extents) {
    if (out.size() >= data_bytes) break;
    const auto take = std::min<std::uint64_t>(e[1].as<std::uint64_t>(), data_bytes - out.size());
    std::string chunk(take, '\0');
    REQUIRE(::pread(fd, chunk.data(), take, e[0].as<off_t>()) == static_cast<ssize_t>(take));
    out += chunk;
  }
  ::close(fd);
  REQUIRE(out.size() == data_bytes);
  return out;
}

void check_copies(pqxx::connection& c, const archive::S3Client& s3, const std::filesystem::path& volume,
                  std::uint64_t stream) {
  pqxx::result copies;
  {
    pqxx::nontransaction q(c);
    copies = q.exec(
        "SELECT s.id, k.bucket, k.object_key, k.bytes, s.data_bytes FROM segments s "
        "JOIN segment_copies k ON k.segment_id = s.id AND k.tier = 's3' WHERE s.stream_id = " +
        std::to_string(stream) + " ORDER BY s.start_us");
  }
  REQUIRE(copies.size() >= 3);
  for (const auto& k : copies) {
    INFO("segment " << k[0].as<std::int64_t>() << " as " << k[2].as<std::string>());
    CHECK(k[3].as<std::uint64_t>() == k[4].as<std::uint64_t>());
    const std::string object = s3.get_object(k[1].as<std::string>(), k[2].as<std::string>());
    const std::string on_volume = segment_bytes_on_volume(c, volume, k[0].as<std::int64_t>());
    CHECK(object.size() == on_volume.size());
    CHECK(object == on_volume);
  }
}

}  // namespace

TEST_CASE("vigild copies closed segments to S3, and each recorded copy is the segment's bytes",
          "[vigild][archive][s3]") {
  const std::string binary = test::seaweedfs_binary();
  if (binary.empty()) SKIP("SeaweedFS is not built: run deploy/seaweedfs.sh (or set VIGIL_SEAWEEDFS)");
  test::SeaweedFs weed(binary);
  REQUIRE(weed.make_bucket("vigil-archive"));

  test::TempDir secrets("vigil-archive-secrets");
  test::RecordingRig rig({"--segment-max", "1", "--archive-endpoint", "127.0.0.1:" + std::to_string(weed.s3_port),
                          "--archive-credentials", test::seaweed_credentials_file(secrets.path()).string(),
                          "--archive-poll-ms", "200"});
  auto& d = *rig.vigild;
  INFO(d.output());
  const auto rec = test::record_acked(d, "gate", 150, 20);  // 6 s of media: 1-2 s segments (they end at a keyframe)
  pqxx::connection c(rig.catalog());
  const auto one = [&](const std::string& sql) { return pqxx::nontransaction(c).exec1(sql)[0].as<std::int64_t>(); };
  const std::string stream = std::to_string(rec.stream);
  const bool copied = test::eventually(
      [&] {
        return one("SELECT count(*) FROM segments s WHERE s.state = 'closed' AND s.stream_id = " + stream +
                   " AND NOT EXISTS (SELECT 1 FROM segment_copies k WHERE k.segment_id = s.id)") == 0 &&
               one("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE state = 'closed' AND stream_id = " +
                   stream) == 150;
      },
      60s);
  if (!copied) FAIL("not every closed segment was copied; vigild said:\n" << d.output());
  const auto volume = std::filesystem::absolute(rig.dir.path() / "vol");
  check_copies(c, weed.client(), volume, rec.stream);
  const auto metrics = test::parse_prometheus_text(test::http_request(d.http(), "GET", "/metrics").body);
  const std::string disk = volume.string();
  CHECK(metrics.value("vigil_archive_segments_total", {{"disk", disk}}) >= one("SELECT count(*) FROM segment_copies"));
  CHECK(metrics.value("vigil_archive_bytes_total", {{"disk", disk}}) >= one("SELECT sum(bytes) FROM segment_copies"));
}

TEST_CASE("segments closed while the object store is down are copied once it is back", "[vigild][archive][s3]") {
  const std::string binary = test::seaweedfs_binary();
  if (binary.empty()) SKIP("SeaweedFS is not built: run deploy/seaweedfs.sh (or set VIGIL_SEAWEEDFS)");
  const std::uint16_t port = test::free_loopback_port();
  test::TempDir secrets("vigil-archive-secrets");
  test::RecordingRig rig({"--segment-max", "1", "--archive-endpoint", "127.0.0.1:" + std::to_string(port),
                          "--archive-credentials", test::seaweed_credentials_file(secrets.path()).string(),
                          "--archive-poll-ms", "200"});
  auto& d = *rig.vigild;
  INFO(d.output());
  const auto rec = test::record_acked(d, "gate", 150, 20);
  pqxx::connection c(rig.catalog());
  const auto one = [&](const std::string& sql) { return pqxx::nontransaction(c).exec1(sql)[0].as<std::int64_t>(); };
  const std::string stream = std::to_string(rec.stream);
  REQUIRE(test::eventually(
      [&] {
        return one("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE state = 'closed' AND stream_id = " +
                   stream) == 150;
      },
      30s));
  // Nothing answers on the store's port: no copy may be recorded, and vigild says why.
  REQUIRE(test::eventually(
      [&] { return d.output().find("archive: the object store does not answer") != std::string::npos; }, 30s));
  CHECK(one("SELECT count(*) FROM segment_copies") == 0);

  test::SeaweedFs weed(binary, port);
  REQUIRE(test::eventually(
      [&] {
        return one("SELECT count(*) FROM segments s WHERE s.state = 'closed' AND s.stream_id = " + stream +
                   " AND NOT EXISTS (SELECT 1 FROM segment_copies k WHERE k.segment_id = s.id)") == 0;
      },
      150s));
  check_copies(c, weed.client(), std::filesystem::absolute(rig.dir.path() / "vol"), rec.stream);
}
