// Boost.URL 1.81 is packaged as headers only: its compiled part is built here, once.
#include <boost/url/src.hpp>
