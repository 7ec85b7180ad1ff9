#include "tap.h"
int main(void) { plan_no_plan(); return done(); }
