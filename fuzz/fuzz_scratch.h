/* fuzz/fuzz_scratch.h - a scratch folder for the fuzz targets that need
 * files (in /dev/shm when writable, else /tmp), removed at exit. */
#ifndef FUZZ_SCRATCH_H
#define FUZZ_SCRATCH_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_dir[128];

static void fuzz_scratch_remove(void)
{
    DIR *d = opendir(fuzz_dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)))
            if (e->d_name[0] != '.') {
                snprintf(p, sizeof p, "%s/%s", fuzz_dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(fuzz_dir);
}

/* Creates the folder once; a harness that cannot run aborts. */
static void fuzz_scratch_init(const char *tag)
{
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/fuzz_%s-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
             tag);
    if (!mkdtemp(fuzz_dir)) {
        perror("mkdtemp");
        abort();
    }
    atexit(fuzz_scratch_remove);
}

#endif
