#include "archive/s3_xml.hpp"

#include <expat.h>

#include <memory>

namespace vigil::archive {
namespace {

constexpr std::size_t kMaxBytes = std::size_t{1} << 20;  // a 1000-key listing is ~300 KiB
constexpr int kMaxDepth = 16;
constexpr std::size_t kMaxElements = 10000;

std::string_view local_name(const char* name) {
  std::string_view n(name);
  const auto colon = n.rfind(':');
  return colon == std::string_view::npos ? n : n.substr(colon + 1);
}

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

struct Reader {
  XML_Parser parser;
  S3Xml out;
  std::vector<std::size_t> open;  // indexes into out.fields of the elements being read
  std::size_t elements = 0;
  std::string error;

  void fail(std::string why) {
    if (error.empty()) error = std::move(why);
    XML_StopParser(parser, XML_FALSE);
  }
};

void on_start(void* data, const char* name, const char**) {
  auto& r = *static_cast<Reader*>(data);
  if (!r.error.empty()) return;
  if (++r.elements > kMaxElements) return r.fail("more than 10000 elements");
  if (r.elements == 1) {
    r.out.root = local_name(name);
    r.open.push_back(static_cast<std::size_t>(-1));
    return;
  }
  if (static_cast<int>(r.open.size()) >= kMaxDepth) return r.fail("nested deeper than 16");
  r.out.fields.emplace_back(std::string(local_name(name)), std::string());
  r.open.push_back(r.out.fields.size() - 1);
}

void on_end(void* data, const char*) {
  auto& r = *static_cast<Reader*>(data);
  if (!r.error.empty() || r.open.empty()) return;
  const std::size_t index = r.open.back();
  r.open.pop_back();
  if (index != static_cast<std::size_t>(-1)) r.out.fields[index].second = trimmed(r.out.fields[index].second);
}

void on_text(void* data, const char* text, int length) {
  auto& r = *static_cast<Reader*>(data);
  if (!r.error.empty() || r.open.empty() || r.open.back() == static_cast<std::size_t>(-1)) return;
  r.out.fields[r.open.back()].second.append(text, static_cast<std::size_t>(length));
}

void on_doctype(void* data, const char*, const char*, const char*, int) {
  static_cast<Reader*>(data)->fail("a DOCTYPE (refused: no entities are expanded)");
}

}  // namespace

std::string_view S3Xml::text_of(std::string_view name) const {
  for (const auto& [n, text] : fields)
    if (n == name) return text;
  return {};
}

S3Xml parse_s3_xml(std::string_view text) {
  if (text.size() > kMaxBytes) throw S3XmlError("S3 reply: more than 1 MiB of XML");
  std::unique_ptr<std::remove_pointer_t<XML_Parser>, decltype(&XML_ParserFree)> parser(XML_ParserCreateNS(nullptr, ':'),
                                                                                       &XML_ParserFree);
  if (!parser) throw S3XmlError("S3 reply: cannot create an XML parser");
  Reader reader{parser.get(), {}, {}, 0, {}};
  XML_SetUserData(parser.get(), &reader);
  XML_SetElementHandler(parser.get(), on_start, on_end);
  XML_SetCharacterDataHandler(parser.get(), on_text);
  XML_SetStartDoctypeDeclHandler(parser.get(), on_doctype);
  const auto status = XML_Parse(parser.get(), text.data(), static_cast<int>(text.size()), XML_TRUE);
  if (!reader.error.empty()) throw S3XmlError("S3 reply: " + reader.error);
  if (status != XML_STATUS_OK)
    throw S3XmlError(std::string("S3 reply: ") + XML_ErrorString(XML_GetErrorCode(parser.get())));
  return std::move(reader.out);
}

}  // namespace vigil::archive
