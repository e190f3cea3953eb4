/* Where an HTTP/1.x response ends, read as llhttp (the Python path's parser) reads it.
   Pure C, no Python: the keep-alive-off core (_churn.c) feeds it what it receives. */
#ifndef TOOLBENCH_CHURN_FRAMING_H
#define TOOLBENCH_CHURN_FRAMING_H

#include <stddef.h>
#include <stdint.h>

#define HEAD_MAX (256 * 1024) /* a head (or chunk line) longer than this is malformed (llhttp has no limit) */

enum { P_HEAD, P_BODY_LEN, P_CHUNK_SIZE, P_CHUNK_DATA, P_CHUNK_END, P_TRAILER, P_BODY_EOF };

typedef struct {
    int pstate;           /* P_*: what the next bytes are */
    int code;             /* the status of the head read last (an interim 1xx too) */
    int final_code;       /* the final status, once its head is read */
    size_t checked;       /* bytes of the head in flight read so far (scan_head) */
    size_t line_start;    /* where its current line starts */
    int line_no, colon;   /* that line's number (0: the status line), and whether its colon came */
    size_t colon_at;      /* where that colon is in the line */
    int64_t remaining;    /* body or chunk bytes still to come */
    int has_length, chunked, until_close;
    int v11, conn_close, conn_keep; /* HTTP/1.1 or later, and the Connection tokens, as llhttp reads them */
    int keep_alive;       /* the final response leaves the connection open (llhttp_should_keep_alive) */
    size_t unread;        /* bytes of the last read after the end of the response */
    char *buf;            /* a head or chunk line that spans reads */
    size_t len, cap;
} Framing;

/* Ready for a new response (keeps the buffer). */
void framing_reset(Framing *f);
/* Frees the buffer. */
void framing_free(Framing *f);
/* Feeds received bytes: 1 when the response is complete, 0 for more, -1 if malformed (or out of
   memory). `head_request`: the request was HEAD, so no body follows any head. Bytes after the
   end of the response are not read: `unread` says how many there were. */
int framing_feed(Framing *f, int head_request, const char *p, size_t n);
/* At the close: whether it ends the response (a body that only the close delimits). */
int framing_ends_at_close(const Framing *f);

#endif
