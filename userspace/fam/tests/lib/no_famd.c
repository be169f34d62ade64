/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Links against libunimem_fam through fam_c.h and checks, on a host without famd (and usually
 * without /dev/unimem_mailbox), that fam_initialize fails cleanly: a FAM_ERR_RPC or
 * FAM_ERR_TIMEOUT code and a message, no crash, no hang. Also: the layouts of fam_types.h
 * are the ones the Rust library was built with, and calls before initialisation fail.
 * Exit 0 on success.
 */
#include <fam/fam_c.h>
#include <fam/fam_abi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

_Static_assert(sizeof(Fam_Stat) == 2120, "Fam_Stat layout");
_Static_assert(offsetof(Fam_Stat, name) == 16, "Fam_Stat.name");
_Static_assert(offsetof(Fam_Stat, memory_servers) == 72, "Fam_Stat.memory_servers");
_Static_assert(sizeof(Fam_Options) == 112, "Fam_Options layout");
_Static_assert(sizeof(Fam_Global_Descriptor) == 16, "Fam_Global_Descriptor layout");

int main(void) {
    c_fam *f = c_fam_create();
    if (!f) {
        fprintf(stderr, "c_fam_create returned NULL\n");
        return 1;
    }
    /* Before initialisation: FAM_ERR_INVALIDOP (18), with a message. */
    if (c_fam_quiet(f) != -18 || c_fam_error() != 18) {
        fprintf(stderr, "quiet before init: %d (%s)\n", c_fam_error(), c_fam_error_msg());
        return 1;
    }
    Fam_Options o = {0};
    o.runtime = (char *)"NONE";
    int rc = c_fam_initialize(f, "default", &o);
    printf("c_fam_initialize: %d, error %d: %s\n", rc, c_fam_error(), c_fam_error_msg());
    if (rc != -11 && rc != -3) {
        fprintf(stderr, "expected FAM_ERR_RPC (-11) or FAM_ERR_TIMEOUT (-3)\n");
        return 1;
    }
    /* Descriptors work without famd. */
    void *d = NULL;
    Fam_Global_Descriptor g = {1, 2};
    if (unimem_fam_desc_new(UNIMEM_FAM_DESC_ITEM, &g, 64, &d) != 0 ||
        unimem_fam_desc_get(d, UNIMEM_FAM_ATTR_SIZE) != 64 ||
        unimem_fam_desc_global(d).offset != 2) {
        fprintf(stderr, "descriptor accessors\n");
        return 1;
    }
    unimem_fam_desc_release(d);
    c_fam_delete(f);
    return 0;
}
