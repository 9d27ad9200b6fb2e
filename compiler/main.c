/* compiler/main.c - the tfcc executable: everything is in driver.c. */
#include <stdio.h>

#include "compiler/driver.h"

int main(int argc, char **argv)
{
    return drv_main(argc, argv, stdout, stderr);
}
