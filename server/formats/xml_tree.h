// Reads a small XML request body (Set Table ACL, Set Service Properties)
// into a boost::property_tree with expat, which keeps its element stack on
// the heap: no input, however deeply nested, recurses. The tree has the
// shape boost::property_tree::read_xml gives (element text concatenated into
// the node's data, attributes under "<xmlattr>", comments as
// "<xmlcomment>"), and its depth and size are capped so that walking and
// destroying it (both recursive in ptree) stay shallow and small.
// Thread-safety: pure function.
#pragma once

#include <boost/property_tree/ptree.hpp>
#include <cstddef>
#include <string_view>

namespace cerulean::server {

// Bounds on a document ReadXmlTree accepts. The bodies it reads are four
// elements deep and hold a few dozen elements.
inline constexpr size_t kMaxXmlDepth = 32;
inline constexpr size_t kMaxXmlElements = 4096;

// Parses `xml` into `*out`. False iff it is not well-formed XML 1.0, has a
// document type declaration (entity expansion is all it could bring), nests
// elements deeper than kMaxXmlDepth or holds more than kMaxXmlElements
// elements; parsing stops at the first element past a bound.
bool ReadXmlTree(std::string_view xml, boost::property_tree::ptree* out);

}  // namespace cerulean::server
