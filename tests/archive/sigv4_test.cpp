// The SigV4 signer against AWS's published examples. Every expected value below is copied from:
//  - S3: "Signature Calculations for the Authorization Header: Transferring Payload in a Single Chunk
//    (AWS Signature Version 4)", section "Examples: Signature Calculations",
//    https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
//    (access key AKIAIOSFODNN7EXAMPLE, secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, us-east-1,
//    20130524T000000Z, bucket examplebucket, virtual-hosted style);
//  - the signing key: "Examples of how to derive a signing key for Signature Version 4" (AWS General
//    Reference, signature-v4-examples.html; now IAM User Guide, reference_sigv4_signing.html).
#include "archive/sigv4.hpp"

#include <catch2/catch_test_macros.hpp>

#include <chrono>

using namespace vigil::archive;

namespace {

const Credentials kDocCredentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1",
                                  "s3"};
constexpr const char* kDocDate = "20130524T000000Z";
constexpr const char* kDocHost = "examplebucket.s3.amazonaws.com";
constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

}  // namespace

TEST_CASE("the signing key of the AWS General Reference's example", "[archive][sigv4]") {
  CHECK(to_hex(signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215", "us-east-1", "iam")) ==
        "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

TEST_CASE("S3 example: GET Object with a Range", "[archive][sigv4]") {
  const RequestToSign request{
      "GET",
      "/test.txt",
      {},
      {{"Host", kDocHost}, {"Range", "bytes=0-9"}, {"x-amz-content-sha256", kEmptySha256}, {"x-amz-date", kDocDate}},
      kEmptySha256};
  const Signature s = sign(request, kDocCredentials, kDocDate);
  CHECK(s.canonical_request ==
        "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
        "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
        "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(s.string_to_sign ==
        "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
        "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  CHECK(s.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  CHECK(s.authorization ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST_CASE("S3 example: PUT Object, a key with '$' and a signed payload", "[archive][sigv4]") {
  const std::string payload_sha256 = sha256_hex("Welcome to Amazon S3.");
  CHECK(payload_sha256 == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  const RequestToSign request{"PUT",
                              "/test$file.text",
                              {},
                              {{"Host", kDocHost},
                               {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                               {"x-amz-date", kDocDate},
                               {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                               {"x-amz-content-sha256", payload_sha256}},
                              payload_sha256};
  const Signature s = sign(request, kDocCredentials, kDocDate);
  CHECK(s.canonical_request.starts_with("PUT\n/test%24file.text\n\ndate:Fri, 24 May 2013 00:00:00 GMT\n"));
  CHECK(s.signed_headers == "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class");
  CHECK(s.string_to_sign.ends_with("\n9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d"));
  CHECK(s.signature == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST_CASE("S3 example: GET Bucket Lifecycle, a query flag signed as name=", "[archive][sigv4]") {
  const RequestToSign request{"GET",
                              "/",
                              {{"lifecycle", ""}},
                              {{"Host", kDocHost}, {"x-amz-date", kDocDate}, {"x-amz-content-sha256", kEmptySha256}},
                              kEmptySha256};
  const Signature s = sign(request, kDocCredentials, kDocDate);
  CHECK(s.canonical_request.starts_with("GET\n/\nlifecycle=\nhost:"));
  CHECK(s.string_to_sign.ends_with("\n9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca"));
  CHECK(s.signature == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST_CASE("S3 example: GET Bucket (List Objects), query parameters sorted", "[archive][sigv4]") {
  // Given out of order on purpose: the signer sorts.
  const RequestToSign request{"GET",
                              "/",
                              {{"prefix", "J"}, {"max-keys", "2"}},
                              {{"Host", kDocHost}, {"x-amz-date", kDocDate}, {"x-amz-content-sha256", kEmptySha256}},
                              kEmptySha256};
  const Signature s = sign(request, kDocCredentials, kDocDate);
  CHECK(s.canonical_request.starts_with("GET\n/\nmax-keys=2&prefix=J\n"));
  CHECK(s.signature == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST_CASE("UriEncode keeps only the unreserved characters, '/' in paths only", "[archive][sigv4]") {
  CHECK(uri_encode("a-b_c.d~e09AZ", false) == "a-b_c.d~e09AZ");
  CHECK(uri_encode("a b+c=d*e!f", false) == "a%20b%2Bc%3Dd%2Ae%21f");
  CHECK(uri_encode("cam 1/2026/seg$1", true) == "cam%201/2026/seg%241");
  CHECK(uri_encode("a/b", false) == "a%2Fb");
  CHECK(uri_encode("\xC3\xA9", false) == "%C3%A9");  // UTF-8 bytes, uppercase hex
}

TEST_CASE("header values are trimmed and inner spaces squeezed", "[archive][sigv4]") {
  const RequestToSign request{"GET", "/b/k", {}, {{"X-Amz-Meta-Note", "  a   b  "}}, std::string(kUnsignedPayload)};
  CHECK(canonical_request(request) == "GET\n/b/k\n\nx-amz-meta-note:a b\n\nx-amz-meta-note\nUNSIGNED-PAYLOAD");
}

TEST_CASE("x-amz-date is UTC in the compact form", "[archive][sigv4]") {
  CHECK(amz_date(std::chrono::system_clock::time_point(std::chrono::seconds(1369353600))) == "20130524T000000Z");
  CHECK(amz_date(std::chrono::system_clock::time_point(std::chrono::seconds(951782399))) == "20000228T235959Z");
}
