#pragma once
#include "graft/graft_plan.h"
