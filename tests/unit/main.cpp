// Catch2 main for spmdc_unit_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
