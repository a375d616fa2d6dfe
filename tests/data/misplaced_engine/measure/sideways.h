#pragma once
#include "graft/graft_check.h"
