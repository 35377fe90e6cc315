#pragma once
// A bounded reader for S3's XML replies (Error, InitiateMultipartUploadResult,
// CompleteMultipartUploadResult), on expat like onvif/'s reader: hostile input is refused, never
// expanded (any DOCTYPE, hence every entity; more than 1 MiB; nesting deeper than 16; more than
// 10000 elements). S3's replies are flat, so the result is the root's name and every element's
// text in document order, by local name.
// Thread: pure code. Errors: parse_s3_xml throws S3XmlError.
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vigil::archive {

struct S3XmlError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct S3Xml {
  std::string root;                                         // "Error", "InitiateMultipartUploadResult", ...
  std::vector<std::pair<std::string, std::string>> fields;  // (local name, trimmed text), document order

  // The text of the first element named NAME, or "".
  std::string_view text_of(std::string_view name) const;
};

S3Xml parse_s3_xml(std::string_view text);

}  // namespace vigil::archive
