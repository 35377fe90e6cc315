#include "archive/s3_client.hpp"

#include "archive/s3_xml.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cctype>

namespace vigil::archive {
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

// S3 object bodies read back whole: a segment is at most a few hundred MiB; 1 GiB is the cap.
constexpr std::uint64_t kMaxBodyBytes = std::uint64_t{1} << 30;

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string target_of(const S3Request& request) {
  std::string target = uri_encode(request.path, true);
  char separator = '?';
  for (const auto& [name, value] : request.query) {
    target += separator;
    target += uri_encode(name, false);
    // A flag ("?uploads") goes on the wire bare; it is signed as "uploads=" all the same.
    if (!value.empty()) target += "=" + uri_encode(value, false);
    separator = '&';
  }
  return target;
}

}  // namespace

S3Error::S3Error(int status, std::string c, std::string m)
    : std::runtime_error("S3 " + std::to_string(status) + " " + c + (m.empty() ? "" : ": " + m)),
      http_status(status),
      code(std::move(c)),
      s3_message(std::move(m)) {}

S3Error s3_error_from(int http_status, std::string_view reason, std::string_view body) {
  if (!body.empty()) {
    try {
      const S3Xml xml = parse_s3_xml(body);
      if (xml.root == "Error")
        return S3Error(http_status, std::string(xml.text_of("Code")), std::string(xml.text_of("Message")));
    } catch (const S3XmlError&) {
      // Not S3's XML (a proxy's HTML page, say): the status and reason say what there is.
    }
  }
  return S3Error(http_status, std::string(reason), {});
}

std::string S3Response::header(std::string_view name) const {
  for (const auto& [n, value] : headers)
    if (n == name) return value;
  return {};
}

S3Client::S3Client(S3Endpoint endpoint) : endpoint_(std::move(endpoint)) {}

S3Response S3Client::send(S3Request request) const {
  const std::string host =
      endpoint_.port == 80 ? endpoint_.host : endpoint_.host + ":" + std::to_string(endpoint_.port);
  sign_request(request, host, endpoint_.credentials, std::chrono::system_clock::now());

  http::request<http::string_body> req(http::string_to_verb(request.method), target_of(request), 11);
  for (const auto& [name, value] : request.headers) req.set(name, value);
  req.body() = std::move(request.body);
  req.prepare_payload();

  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(endpoint_.timeout);
  tcp::resolver resolver(io);
  stream.connect(resolver.resolve(endpoint_.host, std::to_string(endpoint_.port)));
  http::write(stream, req);

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBodyBytes);
  // A HEAD reply carries Content-Length without a body.
  parser.skip(request.method == "HEAD");
  http::read(stream, buffer, parser);
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);

  auto& res = parser.get();
  S3Response out;
  out.http_status = static_cast<int>(res.result_int());
  for (const auto& field : res) out.headers.emplace_back(lowercase(field.name_string()), std::string(field.value()));
  out.body = std::move(res.body());
  if (out.http_status >= 300) throw s3_error_from(out.http_status, std::string(res.reason()), out.body);
  return out;
}

void S3Client::create_bucket(const std::string& bucket, bool object_lock) const {
  send(archive::create_bucket(bucket, object_lock));
}

std::string S3Client::put_object(const std::string& bucket, const std::string& key, std::string body,
                                 std::optional<std::uint32_t> crc32c) const {
  return send(archive::put_object(bucket, key, std::move(body), crc32c)).header("etag");
}

std::string S3Client::get_object(const std::string& bucket, const std::string& key,
                                 std::optional<ByteRange> range) const {
  return send(archive::get_object(bucket, key, range)).body;
}

ObjectInfo S3Client::head_object(const std::string& bucket, const std::string& key) const {
  const S3Response r = send(archive::head_object(bucket, key));
  ObjectInfo info;
  const std::string length = r.header("content-length");
  info.size_bytes = length.empty() ? 0 : std::stoull(length);
  info.etag = r.header("etag");
  info.crc32c = r.header("x-amz-checksum-crc32c");
  info.version_id = r.header("x-amz-version-id");
  return info;
}

void S3Client::delete_object(const std::string& bucket, const std::string& key, const std::string& version_id) const {
  send(archive::delete_object(bucket, key, version_id));
}

std::string S3Client::create_multipart_upload(const std::string& bucket, const std::string& key,
                                              bool checksum_crc32c) const {
  const S3Response r = send(archive::create_multipart_upload(bucket, key, checksum_crc32c));
  const S3Xml xml = parse_s3_xml(r.body);
  const std::string upload_id(xml.text_of("UploadId"));
  if (upload_id.empty()) throw S3Error(r.http_status, "MissingUploadId", "CreateMultipartUpload returned no UploadId");
  return upload_id;
}

std::string S3Client::upload_part(const std::string& bucket, const std::string& key, const std::string& upload_id,
                                  int part_number, std::string body, std::optional<std::uint32_t> crc32c) const {
  return send(archive::upload_part(bucket, key, upload_id, part_number, std::move(body), crc32c)).header("etag");
}

std::string S3Client::complete_multipart_upload(const std::string& bucket, const std::string& key,
                                                const std::string& upload_id,
                                                const std::vector<CompletedPart>& parts) const {
  const S3Response r = send(archive::complete_multipart_upload(bucket, key, upload_id, parts));
  const S3Xml xml = parse_s3_xml(r.body);
  if (xml.root == "Error") throw s3_error_from(r.http_status, "Error", r.body);
  return std::string(xml.text_of("ETag"));
}

void S3Client::abort_multipart_upload(const std::string& bucket, const std::string& key,
                                      const std::string& upload_id) const {
  send(archive::abort_multipart_upload(bucket, key, upload_id));
}

void S3Client::put_object_legal_hold(const std::string& bucket, const std::string& key, bool on) const {
  send(archive::put_object_legal_hold(bucket, key, on));
}

}  // namespace vigil::archive
