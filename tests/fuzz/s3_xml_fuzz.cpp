// Fuzz target: what an S3 server (or anything at the archive's endpoint) sends back (archive):
// the whole input as S3's XML (s3_xml, expat with no DTD or entities) and as an error reply
// (s3_error_from). Checked: only S3XmlError escapes the reader; a parsed reply keeps its element
// bound; an error reply always becomes an S3Error carrying the status it was given.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "archive/s3_client.hpp"
#include "archive/s3_xml.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vigil::archive;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    const S3Xml xml = parse_s3_xml(input);
    check(!xml.root.empty());
    check(xml.fields.size() < 10000);
  } catch (const S3XmlError&) {}
  const S3Error e = s3_error_from(503, "Service Unavailable", input);
  check(e.http_status == 503);
  return 0;
}
