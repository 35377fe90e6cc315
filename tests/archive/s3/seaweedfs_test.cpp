// The S3 client against a real S3 server: SeaweedFS (`weed server -s3`) on 127.0.0.1, built by
// deploy/seaweedfs.sh (not by deploy/install-deps.sh: minutes of Go build). Skipped, saying so,
// when the binary is not built. Label "s3".
#include "archive/s3_client.hpp"
#include "storage/crc32c.hpp"
#include "tests/support/seaweedfs_process.hpp"

#include <catch2/catch_test_macros.hpp>

#include <span>
#include <string>

using namespace vigil::archive;

namespace {

std::uint32_t crc32c_of(std::string_view bytes) {
  return vigil::storage::crc32c(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

// Bytes that differ along their length, so a wrong range or part order shows.
std::string pattern(std::size_t size_bytes, unsigned seed) {
  std::string out(size_bytes, '\0');
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& c : out) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return out;
}

}  // namespace

TEST_CASE("the S3 client against SeaweedFS: put, get, ranges, multipart, errors, legal hold", "[archive][s3]") {
  const std::string binary = vigil::test::seaweedfs_binary();
  if (binary.empty()) SKIP("SeaweedFS is not built: run deploy/seaweedfs.sh (or set VIGIL_SEAWEEDFS)");

  vigil::test::SeaweedFs weed(binary);
  const S3Client s3 = weed.client();
  const std::string bucket = "vigil-archive";
  // One server for every step below (each in its own block, with its own keys): starting
  // SeaweedFS is the slow part.
  // Ready when the S3 gateway, the filer and a volume all answer: the bucket gets made.
  REQUIRE(weed.make_bucket(bucket));

  {
    INFO("PutObject with its CRC32C, read back whole, by range, and headed");
    const std::string body = pattern(300'000, 1);
    s3.put_object(bucket, "cam 1/2026-11-26/seg$1.mp4", body, crc32c_of(body));
    CHECK(s3.get_object(bucket, "cam 1/2026-11-26/seg$1.mp4") == body);
    CHECK(s3.get_object(bucket, "cam 1/2026-11-26/seg$1.mp4", ByteRange{1000, 1999}) == body.substr(1000, 1000));
    CHECK(s3.get_object(bucket, "cam 1/2026-11-26/seg$1.mp4", ByteRange{299'990, 299'999}) == body.substr(299'990));
    const ObjectInfo info = s3.head_object(bucket, "cam 1/2026-11-26/seg$1.mp4");
    CHECK(info.size_bytes == body.size());
    CHECK(!info.etag.empty());
  }

  {
    INFO("a wrong CRC32C is refused");
    const std::string body = pattern(1000, 2);
    CHECK_THROWS_AS(s3.put_object(bucket, "bad", body, crc32c_of(body) ^ 1u), S3Error);
    try {
      s3.get_object(bucket, "bad");
      FAIL("an object whose checksum was wrong was stored");
    } catch (const S3Error& e) {
      CHECK(e.http_status == 404);
    }
  }

  {
    INFO("a missing key is a typed 404 NoSuchKey");
    try {
      s3.get_object(bucket, "absent");
      FAIL("no error");
    } catch (const S3Error& e) {
      CHECK(e.http_status == 404);
      CHECK(e.code == "NoSuchKey");
    }
  }

  {
    INFO("multipart upload with CRC32C parts, read back across a part boundary");
    const std::string part1 = pattern(5 << 20, 3), part2 = pattern(5 << 20, 4), part3 = pattern(12345, 5);
    const std::string upload_id = s3.create_multipart_upload(bucket, "segments/big", true);
    REQUIRE(!upload_id.empty());
    std::vector<CompletedPart> parts;
    int number = 1;
    for (const std::string* part : {&part1, &part2, &part3}) {
      const std::string etag = s3.upload_part(bucket, "segments/big", upload_id, number, *part, crc32c_of(*part));
      REQUIRE(!etag.empty());
      parts.push_back({number++, etag, crc32c_of(*part)});
    }
    s3.complete_multipart_upload(bucket, "segments/big", upload_id, parts);
    const std::string whole = part1 + part2 + part3;
    CHECK(s3.head_object(bucket, "segments/big").size_bytes == whole.size());
    const std::uint64_t boundary = part1.size();
    CHECK(s3.get_object(bucket, "segments/big", ByteRange{boundary - 100, boundary + 99}) ==
          whole.substr(boundary - 100, 200));
    CHECK(s3.get_object(bucket, "segments/big") == whole);
  }

  {
    INFO("an aborted multipart upload takes no more parts and leaves no object");
    const std::string upload_id = s3.create_multipart_upload(bucket, "segments/aborted", true);
    const std::string part = pattern(1000, 6);
    s3.upload_part(bucket, "segments/aborted", upload_id, 1, part, crc32c_of(part));
    s3.abort_multipart_upload(bucket, "segments/aborted", upload_id);
    CHECK_THROWS_AS(s3.upload_part(bucket, "segments/aborted", upload_id, 2, part, crc32c_of(part)), S3Error);
    CHECK_THROWS_AS(s3.head_object(bucket, "segments/aborted"), S3Error);
  }

  {
    INFO("a legal hold blocks deleting the version; lifting it allows it");
    const std::string body = pattern(1000, 7);
    const S3Response put = s3.send(put_object(bucket, "evidence", body, crc32c_of(body)));
    const std::string version = put.header("x-amz-version-id");
    REQUIRE(!version.empty());  // object lock turns versioning on
    s3.put_object_legal_hold(bucket, "evidence", true);
    CHECK_THROWS_AS(s3.delete_object(bucket, "evidence", version), S3Error);
    CHECK(s3.get_object(bucket, "evidence") == body);
    s3.put_object_legal_hold(bucket, "evidence", false);
    s3.delete_object(bucket, "evidence", version);
    CHECK_THROWS_AS(s3.head_object(bucket, "evidence"), S3Error);
  }

  {
    INFO("DeleteObject removes it");
    s3.put_object(bucket, "gone", "x", crc32c_of("x"));
    s3.delete_object(bucket, "gone");
    CHECK_THROWS_AS(s3.get_object(bucket, "gone"), S3Error);
  }
}
