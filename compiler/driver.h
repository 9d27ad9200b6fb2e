/* compiler/driver.h - the tfcc command line driver (drv_), as a library so
 * tests can call it without spawning a process. */
#ifndef COMPILER_DRIVER_H
#define COMPILER_DRIVER_H

#include <stdio.h>

/* Runs one tfcc command line (argv[0] is the program name). Messages go to
 * out/err; returns the process exit code (0 ok, 1 error, 2 usage). */
int drv_main(int argc, char **argv, FILE *out, FILE *err);

#endif
