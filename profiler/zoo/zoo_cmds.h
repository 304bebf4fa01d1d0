/*
 * The subcommands of mosaic-zoo, one line each: the enum value, the name on
 * the command line and the function that runs it (in cmd_<name>.cu). The
 * enum, zoo_main.cu's name table and its dispatch come from this one list.
 * A subcommand's function writes its records between "meta" and "end" and
 * returns 0, or -1 when it could not start (its records say why); the exit
 * status comes from the records (exit_code in zoo_harness.h).
 */
#ifndef MOSAIC_ZOO_CMDS_H
#define MOSAIC_ZOO_CMDS_H

#define ZOO_COMMANDS(X)                                                     \
    X(CMD_LIST, "list", cmd_list)               /* cmd_list.cu */           \
    X(CMD_ONCE, "once", cmd_once)               /* cmd_once.cu */           \
    X(CMD_TIME, "time", cmd_time)               /* cmd_time.cu */           \
    X(CMD_CORUN, "corun", cmd_corun)            /* cmd_corun.cu */          \
    X(CMD_PLACEMENT, "placement", cmd_placement) /* cmd_placement.cu */     \
    X(CMD_MPS, "mps-corun", cmd_mps)            /* cmd_mps_corun.cu */      \
    X(CMD_BEHIND, "behind", cmd_behind)         /* cmd_behind.cu */         \
    X(CMD_RESIDENCY, "residency", cmd_residency) /* cmd_residency.cu */     \
    X(CMD_CORUN_OFFSET, "corun-offset", cmd_corun_offset)                   \
    X(CMD_MPS_OFFSET, "mps-offset", cmd_mps_offset)
    /* the last two: cmd_corun_offset.cu, cmd_mps_offset.cu */

#define ZOO_CMD_ENUM(e, name, fn) e,
enum zoo_cmd { CMD_NONE, ZOO_COMMANDS(ZOO_CMD_ENUM) };
#undef ZOO_CMD_ENUM

#define ZOO_CMD_DECL(e, name, fn) int fn(void);
ZOO_COMMANDS(ZOO_CMD_DECL)
#undef ZOO_CMD_DECL

#endif /* MOSAIC_ZOO_CMDS_H */
