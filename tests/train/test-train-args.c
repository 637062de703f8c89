/* halo-train's flag parser, without MPI: defaults, every flag, and each kind
 * of bad value rejected with a line that names the flag. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "halo-train-args.h"

static halo_status parse(halo_train_args *a, const char *line) {
  /* The parser borrows argv strings (dir, metrics): keep them alive. */
  static char buf[512];
  char *argv[32];
  int argc = 0;
  snprintf(buf, sizeof buf, "halo-train %s", line);
  for (char *tok = strtok(buf, " "); tok && argc < 31; tok = strtok(NULL, " ")) argv[argc++] = tok;
  argv[argc] = NULL;
  return halo_train_args_parse(argc, argv, a);
}

Test(args, defaults_are_the_reference_settings) {
  halo_train_args a;
  cr_assert_eq(parse(&a, "shards"), HALO_OK);
  cr_expect_str_eq(a.dir, "shards");
  cr_expect_str_eq(a.model, "gcn");
  cr_expect_str_eq(a.device, "cpu");
  cr_expect_eq(a.gcn.layers, 2);
  cr_expect_eq(a.gcn.hidden, 16);
  cr_expect_eq(a.epochs, 200);
  cr_expect_float_eq(a.gcn.lr, 0.01f, 1e-9);
  cr_expect_float_eq(a.gcn.weight_decay, 5e-4f, 1e-9);
  cr_expect_eq(a.gcn.weight_decay_all, 0);
  cr_expect_float_eq(a.gcn.dropout, 0.5f, 1e-9);
  cr_expect_float_eq(a.gcn.input_dropout, 0.5f, 1e-9);
  cr_expect_eq(a.gcn.seed, 0);
  cr_expect_eq(a.gcn.normalize_features, 0, "features as stored, as PyG without a transform");
  cr_expect_eq(a.threads, 0);
  cr_expect_eq(a.warmup, 5);
  cr_expect_null(a.metrics);
  cr_expect_eq(a.quiet, 0);
  cr_expect_null(a.checkpoint);
  cr_expect_eq(a.checkpoint_every, 10);
  cr_expect_eq(a.keep, 2);
  cr_expect_eq(a.resume, 0);
  cr_expect_eq(a.timeout, 0.0, "the watchdog is off by default");
  cr_expect_eq(a.gcn.deterministic, 1, "the exact sums are the CPU's default");
}

/* The sums' mode: exact by default on the CPU; the float path with
 * --no-deterministic, on cuda (until a GPU has timed the exact path), and
 * with --halo-aggregate auto, which the exact sums cannot run; an explicit
 * --deterministic refuses that flag and --tf32, and the two modes together. */
Test(args, the_sums_mode_and_its_defaults) {
  static const struct {
    const char *line;
    int det;
  } cases[] = {
      {"shards", 1},
      {"shards --deterministic", 1},
      {"shards --no-deterministic", 0},
      {"shards --device cuda", 0},
      {"shards --device cuda --deterministic", 1},
      {"shards --device cuda --tf32", 0},
      {"shards --halo-aggregate auto", 0},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    halo_train_args a;
    cr_assert_eq(parse(&a, cases[k].line), HALO_OK, "%s", cases[k].line);
    cr_expect_eq(a.gcn.deterministic, cases[k].det, "%s", cases[k].line);
  }
  static const char *const refused[] = {
      "shards --deterministic --no-deterministic",
      "shards --device cuda --tf32 --deterministic",
      "shards --halo-aggregate auto --deterministic",
  };
  for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
    halo_train_args a;
    cr_expect_eq(parse(&a, refused[k]), HALO_ERR_ARG, "%s", refused[k]);
  }
}

Test(args, checkpoint_and_watchdog_flags) {
  halo_train_args a;
  cr_assert_eq(parse(&a, "d --checkpoint ck --checkpoint-every 25 --keep 5 --resume --timeout 2.5"),
               HALO_OK);
  cr_expect_str_eq(a.checkpoint, "ck");
  cr_expect_eq(a.checkpoint_every, 25);
  cr_expect_eq(a.keep, 5);
  cr_expect_eq(a.resume, 1);
  cr_expect_float_eq(a.timeout, 2.5, 1e-9);
}

Test(args, every_flag) {
  halo_train_args a;
  cr_assert_eq(
      parse(&a,
            "--layers 3 --hidden=64 d --epochs 7 --lr 0.5 --weight-decay 0 --weight-decay-all "
            "--dropout 0.25 --seed 99 --device cuda --threads 3 --metrics m.jsonl --quiet "
            "--normalize-features --warmup 2 --model gcn"),
      HALO_OK);
  cr_expect_str_eq(a.dir, "d");
  cr_expect_eq(a.gcn.layers, 3);
  cr_expect_eq(a.gcn.hidden, 64);
  cr_expect_eq(a.epochs, 7);
  cr_expect_float_eq(a.gcn.lr, 0.5f, 1e-9);
  cr_expect_float_eq(a.gcn.weight_decay, 0.0f, 1e-12);
  cr_expect_eq(a.gcn.weight_decay_all, 1);
  cr_expect_float_eq(a.gcn.dropout, 0.25f, 1e-9);
  cr_expect_float_eq(a.gcn.input_dropout, 0.25f, 1e-9, "the input dropout follows --dropout");
  cr_expect_eq(a.gcn.seed, 99);
  cr_expect_str_eq(a.device, "cuda");
  cr_expect_eq(a.threads, 3);
  cr_expect_str_eq(a.metrics, "m.jsonl");
  cr_expect_eq(a.quiet, 1);
  cr_expect_eq(a.gcn.normalize_features, 1);
  cr_expect_eq(a.warmup, 2);
  /* --no-normalize, the old way to ask for the default, still parses;
   * the later of the two flags wins. */
  cr_assert_eq(parse(&a, "d --normalize-features --no-normalize"), HALO_OK);
  cr_expect_eq(a.gcn.normalize_features, 0);
  cr_assert_eq(parse(&a, "d --no-normalize --normalize-features"), HALO_OK);
  cr_expect_eq(a.gcn.normalize_features, 1);
  cr_assert_eq(parse(&a, "d --dropout 0.3 --input-dropout 0"), HALO_OK);
  cr_expect_float_eq(a.gcn.input_dropout, 0.0f, 1e-12);
  cr_assert_eq(parse(&a, "d --epochs 4"), HALO_OK);
  cr_expect_eq(a.warmup, 1, "short runs keep one warm-up epoch");
  cr_assert_eq(parse(&a, "--help"), HALO_OK);
  cr_expect_eq(a.help, 1);
}

Test(args, model_flags) {
  halo_train_args a;
  cr_assert_eq(parse(&a, "d --model sage --sage-normalize --activation elu --residual --norm layer"),
               HALO_OK);
  cr_expect_str_eq(a.model, "sage");
  cr_expect_eq(a.gcn.model, HALO_MODEL_SAGE);
  cr_expect_eq(a.gcn.sage_normalize, 1);
  cr_expect_eq(a.gcn.activation, HALO_ACT_ELU);
  cr_expect_eq(a.gcn.residual, 1);
  cr_expect_eq(a.gcn.norm, 1);
  cr_assert_eq(parse(&a, "d --model=gin --gin-train-eps --norm none"), HALO_OK);
  cr_expect_eq(a.gcn.model, HALO_MODEL_GIN);
  cr_expect_eq(a.gcn.gin_train_eps, 1);
  cr_expect_eq(a.gcn.norm, 0);
  cr_expect_eq(a.gcn.activation, HALO_ACT_RELU);
  cr_expect_eq(a.gcn.residual, 0);
  cr_expect_float_eq(a.gcn.negative_slope, 0.01f, 1e-9); /* torch.nn.LeakyReLU's default */
  /* --norm batch and its two settings (torch.nn.BatchNorm1d's defaults). */
  cr_assert_eq(parse(&a, "d --model gin --norm batch"), HALO_OK);
  cr_expect_eq(a.gcn.norm, HALO_NORM_BATCH);
  cr_expect_float_eq(a.gcn.bn_momentum, 0.1f, 1e-9);
  cr_expect_float_eq(a.gcn.bn_eps, 1e-5f, 1e-12);
  cr_assert_eq(parse(&a, "d --norm batch --bn-momentum 0.3 --bn-eps 1e-3"), HALO_OK);
  cr_expect_float_eq(a.gcn.bn_momentum, 0.3f, 1e-9);
  cr_expect_float_eq(a.gcn.bn_eps, 1e-3f, 1e-9);
  cr_expect_neq(parse(&a, "d --norm layer --bn-momentum 0.3"), HALO_OK);
  cr_expect_neq(parse(&a, "d --bn-eps 1e-3"), HALO_OK);
  cr_expect_neq(parse(&a, "d --norm batch --bn-eps 0"), HALO_OK);
  cr_expect_neq(parse(&a, "d --norm batch --bn-momentum 1.5"), HALO_OK);
  /* The CUDA backend has BatchNorm too (kernels/cuda-rows.cu). */
  cr_assert_eq(parse(&a, "d --model gin --norm batch --device cuda"), HALO_OK);
  cr_expect_eq(a.gcn.norm, HALO_NORM_BATCH);
  cr_assert_eq(parse(&a, "d --activation leaky_relu --negative-slope 0.2"), HALO_OK);
  cr_expect_eq(a.gcn.activation, HALO_ACT_LEAKY_RELU);
  cr_expect_float_eq(a.gcn.negative_slope, 0.2f, 1e-9);
  /* GAT: the paper's defaults where no flag is given, the flags where one is. */
  cr_assert_eq(parse(&a, "d --model gat"), HALO_OK);
  cr_expect_eq(a.gcn.model, HALO_MODEL_GAT);
  cr_expect_eq(a.gcn.heads, 8);
  cr_expect_eq(a.gcn.output_heads, 1);
  cr_expect_eq(a.gcn.hidden, 8);
  cr_expect_eq(a.gcn.activation, HALO_ACT_ELU);
  cr_expect_float_eq(a.gcn.dropout, 0.6f, 1e-7);
  cr_expect_float_eq(a.gcn.input_dropout, 0.6f, 1e-7);
  cr_expect_float_eq(a.gcn.attn_dropout, 0.6f, 1e-7);
  cr_expect_float_eq(a.gcn.lr, 0.005f, 1e-9);
  cr_assert_eq(parse(&a, "d --model gat --heads 4 --output-heads 2 --attn-dropout 0.1 --hidden 16 "
                         "--dropout 0.2 --lr 0.01 --activation relu"),
               HALO_OK);
  cr_expect_eq(a.gcn.heads, 4);
  cr_expect_eq(a.gcn.output_heads, 2);
  cr_expect_eq(a.gcn.hidden, 16);
  cr_expect_eq(a.gcn.activation, HALO_ACT_RELU);
  cr_expect_float_eq(a.gcn.dropout, 0.2f, 1e-7);
  cr_expect_float_eq(a.gcn.attn_dropout, 0.1f, 1e-7);
  cr_expect_float_eq(a.gcn.lr, 0.01f, 1e-9);
}

Test(args, optimizer_and_schedule_flags) {
  halo_train_args a;
  cr_assert_eq(parse(&a, "d"), HALO_OK);
  cr_expect_eq(a.gcn.optimizer, HALO_OPTIMIZER_ADAM, "Adam, as before the flag");
  cr_expect_eq(a.gcn.lr_schedule, HALO_LR_CONSTANT);
  cr_expect_eq(a.gcn.warmup_epochs, 0);
  cr_expect_eq(a.gcn.clip_grad_norm, 0.0f);
  cr_expect_eq(a.gcn.lr_step_size, 30);
  cr_expect_float_eq(a.gcn.lr_gamma, 0.1f, 1e-9, "torch's StepLR and ReduceLROnPlateau");
  cr_expect_eq(a.gcn.lr_patience, 10, "torch's ReduceLROnPlateau");
  cr_assert_eq(parse(&a, "d --optimizer sgd --momentum 0.9 --nesterov --lr-schedule cosine "
                         "--lr-min 1e-4 --warmup-epochs 5 --clip-grad-norm 2 --lr-epochs 300"),
               HALO_OK);
  cr_expect_eq(a.gcn.optimizer, HALO_OPTIMIZER_SGD);
  cr_expect_float_eq(a.gcn.momentum, 0.9f, 1e-9);
  cr_expect_eq(a.gcn.nesterov, 1);
  cr_expect_eq(a.gcn.lr_schedule, HALO_LR_COSINE);
  cr_expect_float_eq(a.gcn.lr_min, 1e-4f, 1e-12);
  cr_expect_eq(a.gcn.warmup_epochs, 5);
  cr_expect_float_eq(a.gcn.clip_grad_norm, 2.0f, 1e-9);
  cr_expect_eq(a.lr_epochs, 300);
  cr_assert_eq(parse(&a, "d --optimizer adamw --lr-schedule plateau --lr-gamma 0.5 "
                         "--lr-patience 3 --lr-min 1e-5"),
               HALO_OK);
  cr_expect_eq(a.gcn.optimizer, HALO_OPTIMIZER_ADAMW);
  cr_expect_eq(a.gcn.lr_schedule, HALO_LR_PLATEAU);
  cr_expect_eq(a.gcn.lr_patience, 3);
  cr_assert_eq(parse(&a, "d --lr-schedule step --lr-step-size 50 --lr-gamma 0.5"), HALO_OK);
  cr_expect_eq(a.gcn.lr_step_size, 50);
}

/* --aggr and GCN's PyG flags: defaults are PyG's (mean; self-loops and
 * normalisation on), and --gcn-normalize false turns the self-loops off
 * unless they are given, as PyG's add_self_loops=None does. */
Test(args, aggregator_and_gcn_flags) {
  halo_train_args a;
  cr_assert_eq(parse(&a, "d --model sage"), HALO_OK);
  cr_expect_eq(a.gcn.aggr, HALO_AGGR_MEAN);
  cr_expect_eq(a.gcn.gcn_self_loops, 1);
  cr_expect_eq(a.gcn.gcn_normalize, 1);
  cr_assert_eq(parse(&a, "d --model sage --aggr max"), HALO_OK);
  cr_expect_eq(a.gcn.aggr, HALO_AGGR_MAX);
  cr_assert_eq(parse(&a, "d --model sage --aggr=sum"), HALO_OK);
  cr_expect_eq(a.gcn.aggr, HALO_AGGR_SUM);
  cr_assert_eq(parse(&a, "d --gcn-add-self-loops false"), HALO_OK);
  cr_expect_eq(a.gcn.gcn_self_loops, 0);
  cr_expect_eq(a.gcn.gcn_normalize, 1);
  cr_assert_eq(parse(&a, "d --gcn-normalize false"), HALO_OK);
  cr_expect_eq(a.gcn.gcn_self_loops, 0);
  cr_expect_eq(a.gcn.gcn_normalize, 0);
  cr_assert_eq(parse(&a, "d --gcn-normalize true --gcn-add-self-loops true"), HALO_OK);
  cr_expect_eq(a.gcn.gcn_self_loops, 1);
  cr_expect_eq(a.gcn.gcn_normalize, 1);
}

Test(args, bad_values_name_the_flag) {
  static const char *cases[][2] = {
      {"d --hidden 0", "--hidden"},
      {"d --epochs -1", "--epochs"},
      {"d --lr nan", "--lr"},
      {"d --lr 0", "--lr"},
      {"d --lr inf", "--lr"},
      {"d --dropout 1", "--dropout"},
      {"d --dropout -0.1", "--dropout"},
      {"d --input-dropout x", "--input-dropout"},
      {"d --layers 17", "--layers"},
      {"d --layers", "--layers"},
      {"d --threads 0", "--threads"},
      {"d --seed -3", "--seed"},
      {"d --hidden 12x", "--hidden"},
      {"d --frobnicate", "--frobnicate"},
      /* Whole names only, as halo-partition: the flag an abbreviation
       * could mean is named, every one when it is ambiguous. */
      {"d --epo 3", "--epo: abbreviated flag names are not accepted; did you mean --epochs?"},
      {"d --checkpoint-e 3", "did you mean --checkpoint-every?"},
      {"d --he", "ambiguous; abbreviated flag names are not accepted; did you mean --heads or "
                 "--help?"},
      {"d --device tpu", "--device"},
      {"d --model gatv2", "--model"},
      {"d --heads 4", "--heads"},
      {"d --model sage --attn-dropout 0.1", "--attn-dropout"},
      {"d --model gat --heads 0", "--heads"},
      {"d --model gat --output-heads 65", "--output-heads"},
      {"d --model gat --attn-dropout 1", "--attn-dropout"},
      {"d --activation tanh", "--activation"},
      {"d --activation leaky_relu --negative-slope 0", "--negative-slope"},
      {"d --activation leaky_relu --negative-slope 1.5", "--negative-slope"},
      {"d --negative-slope nan", "--negative-slope"},
      {"d --negative-slope 0.2", "--negative-slope"},
      {"d --model gat --negative-slope 0.2", "--negative-slope"},
      {"d --norm group", "--norm"},
      {"d --aggr max", "--aggr: the model is gcn, not sage"},
      {"d --model sage --aggr lstm", "--aggr"},
      {"d --model sage --aggr max --halo-precision int8", "--halo-precision"},
      {"d --halo-stale --halo-sample 0.5", "--halo-stale with --halo-sample"},
      {"d --model sage --aggr max --halo-stale", "--aggr max with --halo-stale"},
      {"d --model sage --aggr max --halo-sample 0.5", "--aggr max with --halo-sample"},
      {"d --halo-aggregate auto --halo-stale --halo-sample 0.5", "--halo-stale with --halo-sample"},
      {"d --halo-aggregate auto --halo-sample 0.5", "--halo-aggregate auto with --halo-sample"},
      {"d --model sage --aggr sum --halo-aggregate auto", "--halo-aggregate auto: the covers"},
      {"d --model sage --gcn-normalize false", "--gcn-normalize: the model is sage"},
      {"d --model gin --gcn-add-self-loops false", "--gcn-add-self-loops: the model is gin"},
      {"d --gcn-normalize 0", "--gcn-normalize"},
      {"d --gcn-normalize false --gcn-add-self-loops true", "--gcn-add-self-loops true needs"},
      {"d --sage-normalize", "--sage-normalize"},
      {"d --model sage --gin-train-eps", "--gin-train-eps"},
      {"d --model gin --weight-decay-all", "--weight-decay-all"},
      {"d --residual=1", "--residual"},
      {"d --quiet=1", "--quiet"},
      {"d --epochs 3 --warmup 3", "--warmup"},
      {"", "shard folder"},
      {"d e", "e"},
      {"d --resume", "--resume needs --checkpoint"},
      {"d --checkpoint-every 5", "--checkpoint-every needs --checkpoint"},
      {"d --keep 3", "--keep needs --checkpoint"},
      {"d --checkpoint c --checkpoint-every 0", "--checkpoint-every"},
      {"d --checkpoint c --keep 0", "--keep"},
      {"d --checkpoint=", "--checkpoint"},
      {"d --timeout 0", "--timeout"},
      {"d --timeout nan", "--timeout"},
      {"d --resume=1", "--resume"},
      {"d --optimizer lamb", "--optimizer"},
      {"d --momentum 0.9", "--momentum is sgd's"},
      {"d --optimizer adamw --nesterov", "--nesterov is sgd's"},
      {"d --optimizer sgd --momentum 1", "--momentum"},
      {"d --optimizer sgd --nesterov", "--nesterov needs a --momentum"},
      {"d --lr-schedule linear", "--lr-schedule"},
      {"d --lr-step-size 5", "--lr-step-size does not apply to --lr-schedule constant"},
      {"d --lr-schedule cosine --lr-gamma 0.5", "--lr-gamma does not apply"},
      {"d --lr-schedule step --lr-min 0.001", "--lr-min does not apply"},
      {"d --lr-schedule step --lr-patience 3", "--lr-patience does not apply"},
      {"d --lr-schedule plateau --lr-epochs 30", "--lr-epochs does not apply"},
      {"d --lr-schedule step --lr-gamma 0", "--lr-gamma"},
      {"d --lr-schedule step --lr-gamma 1", "--lr-gamma"},
      {"d --lr-schedule step --lr-step-size 0", "--lr-step-size"},
      {"d --warmup-epochs -1", "--warmup-epochs"},
      {"d --lr-schedule cosine --epochs 10 --warmup-epochs 10", "--warmup-epochs 10 leaves no"},
      {"d --clip-grad-norm 0", "--clip-grad-norm"},
      {"d --clip-grad-norm nan", "--clip-grad-norm"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    halo_train_args a;
    char path[] = "/tmp/halo-args-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    fflush(stderr);
    FILE *saved = fdopen(dup(2), "w");
    dup2(fd, 2);
    halo_status st = parse(&a, cases[i][0]);
    fflush(stderr);
    dup2(fileno(saved), 2);
    fclose(saved);
    char text[1024] = "";
    lseek(fd, 0, SEEK_SET);
    ssize_t got = read(fd, text, sizeof text - 1);
    text[got > 0 ? got : 0] = '\0';
    close(fd);
    unlink(path);
    cr_expect_eq(st, HALO_ERR_ARG, "'%s' was accepted", cases[i][0]);
    cr_expect(strstr(text, cases[i][1]) != NULL, "'%s': the message does not name %s: %s",
              cases[i][0], cases[i][1], text);
    int lines = 0;
    for (const char *c = text; *c; c++) lines += *c == '\n';
    cr_expect_eq(lines, 1, "'%s': %d lines: %s", cases[i][0], lines, text);
  }
}

Test(args, embeddings_and_eval_only_checkpoint_file) {
  halo_train_args a;
  cr_assert_eq(parse(&a, "d --embeddings e.h5 --layers 3"), HALO_OK);
  cr_expect_str_eq(a.embeddings, "e.h5");
  cr_expect_eq(a.embeddings_layer, 3, "the default is the input of the last layer");
  cr_assert_eq(parse(&a, "d --embeddings e.h5 --layers 3 --embeddings-layer 2"), HALO_OK);
  cr_expect_eq(a.embeddings_layer, 2);
  cr_expect_neq(parse(&a, "d --embeddings-layer 2"), HALO_OK, "needs --embeddings");
  cr_expect_neq(parse(&a, "d --embeddings e.h5 --embeddings-layer 3"), HALO_OK, "past --layers");
  cr_expect_neq(parse(&a, "d --embeddings e.h5 --embeddings-layer 1"), HALO_OK,
                "layer 1's input is the features");
  cr_expect_neq(parse(&a, "d --embeddings e.h5 --layers 1"), HALO_OK);
  cr_expect_neq(parse(&a, "d --eval-only"), HALO_OK, "--eval-only needs a checkpoint");
  /* --eval-only --checkpoint FILE: the model comes from the file, so the
   * rules between model flags wait for it; the given ones are noted. */
  cr_assert_eq(parse(&a, "d --eval-only --checkpoint ck/best.h5 --heads 4 --embeddings e.h5"),
               HALO_OK);
  cr_expect_eq(a.eval_file, 1);
  cr_expect_eq(a.resume, 0);
  cr_expect_eq(a.embeddings_layer, 0, "the file's last layer, once read");
  cr_expect(a.model_given[HALO_MOPT_HEADS] && !a.model_given[HALO_MOPT_HIDDEN]);
  cr_assert_eq(parse(&a, "d --eval-only --checkpoint ck --resume"), HALO_OK);
  cr_expect_eq(a.eval_file, 0);
}
