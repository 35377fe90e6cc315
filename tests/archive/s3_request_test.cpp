// The S3 calls as requests (method, path, query, headers, body) before they are sent, and the
// signing step that makes them sendable. No server: what goes on the wire is asserted here, what
// a server makes of it in s3/seaweedfs_test.cpp.
#include "archive/s3_request.hpp"

#include <catch2/catch_test_macros.hpp>

#include <algorithm>

using namespace vigil::archive;

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

std::string header(const S3Request& r, std::string_view name) {
  for (const auto& [n, v] : r.headers)
    if (n == name) return v;
  return "<absent>";
}

}  // namespace

TEST_CASE("x-amz-checksum-crc32c is base64 of the big-endian CRC", "[archive][s3]") {
  // CRC32C("123456789") = 0xE3069283 (RFC 3720's check value): bytes E3 06 92 83.
  CHECK(crc32c_header_value(0xE3069283u) == "4waSgw==");
  CHECK(crc32c_header_value(0) == "AAAAAA==");
}

TEST_CASE("PutObject: path-style, the body, the CRC32C header", "[archive][s3]") {
  const S3Request r = put_object("archive", "cam 1/seg$1.mp4", "data", 0xE3069283u);
  CHECK(r.method == "PUT");
  CHECK(r.path == "/archive/cam 1/seg$1.mp4");  // raw: encoded once, when signed and sent
  CHECK(r.query.empty());
  CHECK(r.body == "data");
  CHECK(header(r, "x-amz-checksum-crc32c") == "4waSgw==");
  CHECK(header(put_object("b", "k", "x", std::nullopt), "x-amz-checksum-crc32c") == "<absent>");
}

TEST_CASE("GetObject with a Range, HeadObject, DeleteObject", "[archive][s3]") {
  const S3Request get = get_object("b", "k", ByteRange{100, 199});
  CHECK(get.method == "GET");
  CHECK(get.path == "/b/k");
  CHECK(header(get, "range") == "bytes=100-199");
  CHECK(get.body.empty());
  CHECK(header(get_object("b", "k"), "range") == "<absent>");
  CHECK(head_object("b", "k").method == "HEAD");
  const S3Request del = delete_object("b", "k");
  CHECK(del.method == "DELETE");
  CHECK(del.path == "/b/k");
  CHECK(del.query.empty());
  CHECK(delete_object("b", "k", "v1").query == Pairs{{"versionId", "v1"}});
}

TEST_CASE("multipart: create, upload part, complete, abort", "[archive][s3]") {
  const S3Request create = create_multipart_upload("b", "k", true);
  CHECK(create.method == "POST");
  CHECK(create.query == Pairs{{"uploads", ""}});
  CHECK(header(create, "x-amz-checksum-algorithm") == "CRC32C");

  const S3Request part = upload_part("b", "k", "up/1+2", 3, "bytes", 0xE3069283u);
  CHECK(part.method == "PUT");
  CHECK(part.query == Pairs{{"partNumber", "3"}, {"uploadId", "up/1+2"}});
  CHECK(part.body == "bytes");
  CHECK(header(part, "x-amz-checksum-crc32c") == "4waSgw==");

  const S3Request complete =
      complete_multipart_upload("b", "k", "up1", {{1, "\"e1\"", 0xE3069283u}, {2, "\"e2\"", std::nullopt}});
  CHECK(complete.method == "POST");
  CHECK(complete.query == Pairs{{"uploadId", "up1"}});
  CHECK(complete.body ==
        "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag><ChecksumCRC32C>4waSgw==</ChecksumCRC32C></Part>"
        "<Part><PartNumber>2</PartNumber><ETag>&quot;e2&quot;</ETag></Part>"
        "</CompleteMultipartUpload>");

  const S3Request abort = abort_multipart_upload("b", "k", "up1");
  CHECK(abort.method == "DELETE");
  CHECK(abort.query == Pairs{{"uploadId", "up1"}});
}

TEST_CASE("PutObjectLegalHold: the XML body and its Content-MD5", "[archive][s3]") {
  const S3Request r = put_object_legal_hold("b", "k", true);
  CHECK(r.method == "PUT");
  CHECK(r.query == Pairs{{"legal-hold", ""}});
  CHECK(r.body == "<LegalHold xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>ON</Status></LegalHold>");
  CHECK(header(r, "content-md5") == "erOisiAmIIzsh/Ze2QqGXw==");
  CHECK(put_object_legal_hold("b", "k", false).body.find("<Status>OFF</Status>") != std::string::npos);
}

TEST_CASE("CreateBucket asks for object lock when told", "[archive][s3]") {
  CHECK(create_bucket("b", true).path == "/b");
  CHECK(header(create_bucket("b", true), "x-amz-bucket-object-lock-enabled") == "true");
  CHECK(header(create_bucket("b", false), "x-amz-bucket-object-lock-enabled") == "<absent>");
}

TEST_CASE("signing adds host, x-amz-date, the body's SHA-256 and Authorization", "[archive][s3]") {
  S3Request r = put_object("b", "k", "Welcome to Amazon S3.", std::nullopt);
  const Credentials credentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1", "s3"};
  sign_request(r, "127.0.0.1:8333", credentials,
               std::chrono::system_clock::time_point(std::chrono::seconds(1369353600)));
  CHECK(header(r, "host") == "127.0.0.1:8333");
  CHECK(header(r, "x-amz-date") == "20130524T000000Z");
  CHECK(header(r, "x-amz-content-sha256") == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  const std::string authorization = header(r, "authorization");
  CHECK(
      authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
                                "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature="));
  // The same request signed again is the same signature; another body is another.
  S3Request again = put_object("b", "k", "Welcome to Amazon S3.", std::nullopt);
  sign_request(again, "127.0.0.1:8333", credentials,
               std::chrono::system_clock::time_point(std::chrono::seconds(1369353600)));
  CHECK(header(again, "authorization") == authorization);
  S3Request other = put_object("b", "k", "Welcome to Amazon S3!", std::nullopt);
  sign_request(other, "127.0.0.1:8333", credentials,
               std::chrono::system_clock::time_point(std::chrono::seconds(1369353600)));
  CHECK(header(other, "authorization") != authorization);
}
