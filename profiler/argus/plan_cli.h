/* The argus command's query and plan subcommands (plan_cli.c), called
 * from argus_cli.c's main with the words after the subcommand. */
#ifndef ARGUS_PLAN_CLI_H
#define ARGUS_PLAN_CLI_H

/* is_query: 1 for `argus query`, 0 for `argus plan`. Returns the exit
 * status (0, 1 bad input, 2 usage, 3 partial plan with --strict). */
int argus__cli_plan(int is_query, int argc, char **argv);

#endif /* ARGUS_PLAN_CLI_H */
