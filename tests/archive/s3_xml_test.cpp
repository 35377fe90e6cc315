// S3's XML replies: read, and hostile ones refused; S3's Error turned into a typed S3Error.
#include "archive/s3_client.hpp"
#include "archive/s3_xml.hpp"

#include <catch2/catch_test_macros.hpp>

using namespace vigil::archive;

TEST_CASE("InitiateMultipartUploadResult gives its UploadId", "[archive][s3]") {
  const S3Xml xml = parse_s3_xml(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Bucket>b</Bucket><Key>k</Key><UploadId> VXBsb2FkIElE </UploadId></InitiateMultipartUploadResult>");
  CHECK(xml.root == "InitiateMultipartUploadResult");
  CHECK(xml.text_of("UploadId") == "VXBsb2FkIElE");
  CHECK(xml.text_of("Bucket") == "b");
  CHECK(xml.text_of("Missing").empty());
}

TEST_CASE("S3's XML Error becomes an S3Error with the HTTP status", "[archive][s3]") {
  const S3Error e = s3_error_from(404, "Not Found",
                                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NoSuchKey</Code>"
                                  "<Message>The specified key does not exist.</Message><Key>k</Key></Error>");
  CHECK(e.http_status == 404);
  CHECK(e.code == "NoSuchKey");
  CHECK(e.s3_message == "The specified key does not exist.");
  CHECK(std::string(e.what()) == "S3 404 NoSuchKey: The specified key does not exist.");
}

TEST_CASE("a reply that is not S3's XML keeps the status and reason", "[archive][s3]") {
  const S3Error html = s3_error_from(502, "Bad Gateway", "<html><body>proxy</body>");
  CHECK(html.http_status == 502);
  CHECK(html.code == "Bad Gateway");
  const S3Error head = s3_error_from(404, "Not Found", "");
  CHECK(head.code == "Not Found");
}

TEST_CASE("hostile XML is refused, not expanded", "[archive][s3]") {
  CHECK_THROWS_AS(parse_s3_xml("<!DOCTYPE r [<!ENTITY a \"aaaa\">]><Error><Code>&a;</Code></Error>"), S3XmlError);
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "<a>";
  for (int i = 0; i < 40; ++i) deep += "</a>";
  CHECK_THROWS_AS(parse_s3_xml(deep), S3XmlError);
  CHECK_THROWS_AS(parse_s3_xml(std::string((1u << 20) + 1, ' ')), S3XmlError);
  std::string many = "<r>";
  for (int i = 0; i < 10001; ++i) many += "<e/>";
  many += "</r>";
  CHECK_THROWS_AS(parse_s3_xml(many), S3XmlError);
  CHECK_THROWS_AS(parse_s3_xml("<Error><Code>x</Code>"), S3XmlError);  // truncated
}
