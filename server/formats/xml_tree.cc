#include "server/formats/xml_tree.h"

#include <expat.h>

#include <climits>
#include <memory>
#include <string>
#include <vector>

namespace cerulean::server {

namespace pt = boost::property_tree;

namespace {

class TreeBuilder {
 public:
  TreeBuilder(XML_Parser parser, pt::ptree* root) : parser_(parser) { stack_.push_back(root); }

  static void XMLCALL OnStart(void* data, const XML_Char* name, const XML_Char** attrs) {
    static_cast<TreeBuilder*>(data)->Start(name, attrs);
  }
  static void XMLCALL OnEnd(void* data, const XML_Char*) {
    static_cast<TreeBuilder*>(data)->stack_.pop_back();
  }
  static void XMLCALL OnText(void* data, const XML_Char* s, int len) {
    static_cast<TreeBuilder*>(data)->stack_.back()->data().append(s, static_cast<size_t>(len));
  }
  static void XMLCALL OnComment(void* data, const XML_Char* text) {
    auto* self = static_cast<TreeBuilder*>(data);
    if (self->stack_.size() > 1) self->stack_.back()->push_back({"<xmlcomment>", pt::ptree(text)});
  }
  static void XMLCALL OnDoctype(void* data, const XML_Char*, const XML_Char*, const XML_Char*,
                                int) {
    static_cast<TreeBuilder*>(data)->Fail();
  }

  bool failed() const { return failed_; }

 private:
  void Start(const XML_Char* name, const XML_Char** attrs) {
    // The stack holds the document node, so its size is the new depth.
    if (stack_.size() > kMaxXmlDepth || ++elements_ > kMaxXmlElements) return Fail();
    pt::ptree& node = stack_.back()->push_back({name, pt::ptree()})->second;
    if (attrs[0] != nullptr) {
      pt::ptree& attributes = node.push_back({"<xmlattr>", pt::ptree()})->second;
      for (size_t i = 0; attrs[i] != nullptr; i += 2) {
        attributes.push_back({attrs[i], pt::ptree(attrs[i + 1])});
      }
    }
    stack_.push_back(&node);
  }

  void Fail() {
    failed_ = true;
    XML_StopParser(parser_, XML_FALSE);
  }

  XML_Parser parser_;
  std::vector<pt::ptree*> stack_;  // open elements, the document first
  size_t elements_ = 0;
  bool failed_ = false;
};

}  // namespace

bool ReadXmlTree(std::string_view xml, pt::ptree* out) {
  out->clear();
  if (xml.size() > static_cast<size_t>(INT_MAX)) return false;
  std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(XML_ParserCreate(nullptr),
                                                                      &XML_ParserFree);
  if (!parser) return false;
  TreeBuilder builder(parser.get(), out);
  XML_SetUserData(parser.get(), &builder);
  XML_SetElementHandler(parser.get(), &TreeBuilder::OnStart, &TreeBuilder::OnEnd);
  XML_SetCharacterDataHandler(parser.get(), &TreeBuilder::OnText);
  XML_SetCommentHandler(parser.get(), &TreeBuilder::OnComment);
  XML_SetStartDoctypeDeclHandler(parser.get(), &TreeBuilder::OnDoctype);
  const XML_Status status =
      XML_Parse(parser.get(), xml.data(), static_cast<int>(xml.size()), XML_TRUE);
  if (status != XML_STATUS_OK || builder.failed()) {
    out->clear();
    return false;
  }
  return true;
}

}  // namespace cerulean::server
