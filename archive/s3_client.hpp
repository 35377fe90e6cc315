#pragma once
// A small blocking S3 client for the archive tier (docs/archive.md): path-style requests over
// HTTP/1.1 on Boost.Beast, signed with SigV4 (archive/sigv4.hpp), one connection per call. HTTP
// only for now: the test peer (SeaweedFS) listens on loopback; TLS to a remote store is the next
// step (common/tls_context.hpp's client context).
// Thread: one call at a time per client; clients share nothing. Errors: S3Error for S3's own
// refusals (its XML Error, with the HTTP status), std::runtime_error for the network.
#include "archive/s3_request.hpp"
#include "archive/sigv4.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vigil::archive {

struct S3Endpoint {
  std::string host;  // a name or an IP address
  std::uint16_t port = 80;
  Credentials credentials;
  std::chrono::milliseconds timeout{30000};  // per call: connect, send and read together
};

// A request S3 answered with an error status. CODE and S3_MESSAGE come from its XML Error body
// (empty for a HEAD, which has no body: then CODE is the status's reason, e.g. "NotFound").
struct S3Error : std::runtime_error {
  S3Error(int http_status, std::string code, std::string s3_message);
  int http_status;
  std::string code;  // "NoSuchKey", "AccessDenied", "InvalidRequest", ...
  std::string s3_message;
};

struct S3Response {
  int http_status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercase
  std::string body;

  // The header's value, or "".
  std::string header(std::string_view name) const;
};

struct ObjectInfo {
  std::uint64_t size_bytes = 0;
  std::string etag;
  std::string crc32c;      // x-amz-checksum-crc32c when the server returns it, else ""
  std::string version_id;  // x-amz-version-id in a versioned bucket, else ""
};

class S3Client {
 public:
  explicit S3Client(S3Endpoint endpoint);

  // Signs and sends REQUEST; a status of 300 or more throws S3Error.
  S3Response send(S3Request request) const;

  void create_bucket(const std::string& bucket, bool object_lock) const;
  // Returns the ETag.
  std::string put_object(const std::string& bucket, const std::string& key, std::string body,
                         std::optional<std::uint32_t> crc32c) const;
  std::string get_object(const std::string& bucket, const std::string& key, std::optional<ByteRange> range = {}) const;
  ObjectInfo head_object(const std::string& bucket, const std::string& key) const;
  void delete_object(const std::string& bucket, const std::string& key, const std::string& version_id = {}) const;
  // Returns the upload id.
  std::string create_multipart_upload(const std::string& bucket, const std::string& key, bool checksum_crc32c) const;
  // Returns the part's ETag.
  std::string upload_part(const std::string& bucket, const std::string& key, const std::string& upload_id,
                          int part_number, std::string body, std::optional<std::uint32_t> crc32c) const;
  // Returns the object's ETag. S3 may answer 200 with an Error body here: that throws S3Error too.
  std::string complete_multipart_upload(const std::string& bucket, const std::string& key, const std::string& upload_id,
                                        const std::vector<CompletedPart>& parts) const;
  void abort_multipart_upload(const std::string& bucket, const std::string& key, const std::string& upload_id) const;
  void put_object_legal_hold(const std::string& bucket, const std::string& key, bool on) const;

 private:
  S3Endpoint endpoint_;
};

// The S3Error for a reply of HTTP_STATUS with BODY (S3's XML Error, or anything else).
S3Error s3_error_from(int http_status, std::string_view reason, std::string_view body);

}  // namespace vigil::archive
