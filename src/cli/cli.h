/*
 * cli: subcommands of the qreport binary other than the report itself.
 * main.c dispatches on argv[1].
 */
#ifndef QR_CLI_H
#define QR_CLI_H

/*
 * `qreport run MODEL.onnx --input NAME=FILE ... -o DIR [--dump-all]
 * [--profile]`: run a model on .npy/.pb inputs and write its outputs as
 * .npy. argv[0] is "run" (call it as qr_cli_run(argc - 1, argv + 1); a
 * full argv whose argv[1] is "run" is accepted too). Prints its own errors
 * and returns the exit code: 0 ok, 1 usage, 2 bad input.
 */
int qr_cli_run(int argc, char **argv);

#endif
