#pragma once
// The S3 calls the archive tier makes, as plain requests (method, path-style path, query, headers,
// body) before they are signed and sent: building them is pure code, tested without a server
// (tests/archive/s3_request_test.cpp). Checksums are CRC32C values the caller computed (storage/
// has the ISA-L one; archive/ depends on common/ only, so the value comes in as a number) and are
// sent as S3 wants them: base64 of the 4 big-endian bytes in x-amz-checksum-crc32c.
// Thread: pure code. Errors: none.
#include "archive/sigv4.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vigil::archive {

struct S3Request {
  std::string method;
  std::string path;  // raw, path-style: "/bucket/key"
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// A byte range, both ends inclusive (HTTP's Range: bytes=first-last).
struct ByteRange {
  std::uint64_t first_byte = 0;
  std::uint64_t last_byte = 0;
};

struct CompletedPart {
  int part_number = 0;
  std::string etag;  // as UploadPart returned it, quotes included
  std::optional<std::uint32_t> crc32c;
};

// base64 of the 4 big-endian bytes of CRC, the form of x-amz-checksum-crc32c.
std::string crc32c_header_value(std::uint32_t crc);
// base64 of BYTES.
std::string base64_encode(std::string_view bytes);

S3Request create_bucket(const std::string& bucket, bool object_lock);
S3Request put_object(const std::string& bucket, const std::string& key, std::string body,
                     std::optional<std::uint32_t> crc32c);
S3Request get_object(const std::string& bucket, const std::string& key, std::optional<ByteRange> range = {});
S3Request head_object(const std::string& bucket, const std::string& key);
// VERSION_ID (non-empty): that version, for good; else the current one (a delete marker in a
// versioned bucket, which even a legal hold allows).
S3Request delete_object(const std::string& bucket, const std::string& key, const std::string& version_id = {});
// CHECKSUM_CRC32C: the upload's parts carry CRC32C checksums (x-amz-checksum-algorithm).
S3Request create_multipart_upload(const std::string& bucket, const std::string& key, bool checksum_crc32c);
S3Request upload_part(const std::string& bucket, const std::string& key, const std::string& upload_id, int part_number,
                      std::string body, std::optional<std::uint32_t> crc32c);
S3Request complete_multipart_upload(const std::string& bucket, const std::string& key, const std::string& upload_id,
                                    const std::vector<CompletedPart>& parts);
S3Request abort_multipart_upload(const std::string& bucket, const std::string& key, const std::string& upload_id);
// Object lock's legal hold ON or OFF (the bucket must have object lock enabled).
S3Request put_object_legal_hold(const std::string& bucket, const std::string& key, bool on);

// Adds host, x-amz-date, x-amz-content-sha256 (the body's SHA-256) and Authorization to REQUEST.
void sign_request(S3Request& request, const std::string& host, const Credentials& credentials,
                  std::chrono::system_clock::time_point now);

}  // namespace vigil::archive
