#include <criterion/criterion.h>
#include "loader-test.h"
