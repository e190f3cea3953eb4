/* Where an HTTP/1.x response ends (RFC 9112 section 6.3), held to what llhttp accepts so that
   both keep-alive-off paths count the same: HEAD, 1xx, 204 and 304 have no body; chunked;
   Content-Length; otherwise (or another coding last) the close ends the body. Not HTTP/x.y, a
   bare LF, a header name that is not a token, a duplicate Content-Length, a length together with
   a Transfer-Encoding, or a bad chunk line is malformed. */
#define _GNU_SOURCE /* memmem */
#include "_churn_framing.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void framing_reset(Framing *f) {
    f->pstate = P_HEAD;
    f->code = f->final_code = 0;
    f->checked = f->line_start = f->line_no = f->colon = 0;
    f->remaining = 0;
    f->has_length = f->chunked = f->until_close = 0;
    f->len = 0;
}

void framing_free(Framing *f) {
    free(f->buf);
    f->buf = NULL;
    f->len = f->cap = 0;
}

int framing_ends_at_close(const Framing *f) { return f->pstate == P_BODY_EOF; }

/* Appends to the line buffer; -1 when it would outgrow HEAD_MAX. */
static int keep(Framing *f, const char *p, size_t n) {
    if (f->len + n > HEAD_MAX) return -1;
    if (f->len + n > f->cap) {
        size_t cap = f->cap ? f->cap : 1024;
        while (cap < f->len + n) cap *= 2;
        char *grown = realloc(f->buf, cap);
        if (grown == NULL) return -1;
        f->buf = grown;
        f->cap = cap;
    }
    memcpy(f->buf + f->len, p, n);
    f->len += n;
    return 0;
}

static int header_is(const char *line, size_t n, const char *name, const char **value, size_t *vlen) {
    size_t k = strlen(name);
    if (n <= k || line[k] != ':' || strncasecmp(line, name, k) != 0) return 0;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) end--;
    *value = v;
    *vlen = (size_t)(end - v);
    return 1;
}

static int token_char(char ch) {
    return ch > ' ' && ch < 127 && strchr("\"(),/;<=>?@[\\]{}", ch) == NULL;
}

/* The status line's first 13 bytes: "HTTP/d.d ddd" and a space or the CR. */
static int status_char_ok(size_t col, char ch) {
    if (col < 5) return ch == "HTTP/"[col];
    if (col == 5 || col == 7 || (col >= 9 && col <= 11)) return ch >= '0' && ch <= '9';
    if (col == 6) return ch == '.';
    if (col == 8) return ch == ' ';
    return ch == ' ' || ch == '\r';
}

/* Checks the head's bytes [f->checked, n) as they arrive, as llhttp does byte by byte: the
   status line's form, a token before each header's colon, CRLF line ends. -1 if malformed.
   Resumes where it stopped, so a head that arrives a byte at a time is read once. */
static int check_head(Framing *f, const char *h, size_t n) {
    for (size_t k = f->checked; k < n; k++) {
        char ch = h[k];
        size_t col = k - f->line_start;
        if (ch == '\n') {
            if (k == 0 || h[k - 1] != '\r' || (f->line_no == 0 && col < 13)) return -1;
            if (f->line_no > 0 && !f->colon && col != 1) return -1; /* a header line without a colon */
            f->line_start = k + 1;
            f->line_no++;
            f->colon = 0;
        } else if (f->line_no == 0) {
            if (col < 13 && !status_char_ok(col, ch)) return -1;
        } else if (!f->colon) {
            if (ch == ':') {
                if (col == 0) return -1;
                f->colon = 1;
            } else if (ch == '\r' ? col != 0 : !token_char(ch)) {
                return -1;
            }
        }
    }
    f->checked = n;
    return 0;
}

/* Reads a complete head that check_head() passed (status line and headers, up to its empty
   line): its status and framing headers. 0, or -1 if malformed, as llhttp would say. */
static int parse_head(Framing *f, const char *p, size_t n) {
    int code = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    if (code < 100) return -1;
    f->code = code;
    f->has_length = f->chunked = f->until_close = 0;
    const char *line = memchr(p, '\n', n);
    const char *end = p + n;
    while (line != NULL && ++line < end) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        size_t len = eol ? (size_t)(eol - line) : (size_t)(end - line);
        const char *v;
        size_t vlen;
        if (len <= 1) break; /* the empty line */
        if (header_is(line, len, "content-length", &v, &vlen)) {
            if (vlen == 0 || vlen > 18) return -1;
            int64_t length = 0;
            for (size_t k = 0; k < vlen; k++) {
                if (v[k] < '0' || v[k] > '9') return -1;
                length = length * 10 + (v[k] - '0');
            }
            if (f->has_length) return -1; /* a duplicate, even an equal one */
            f->has_length = 1;
            f->remaining = length;
        } else if (header_is(line, len, "transfer-encoding", &v, &vlen)) {
            f->chunked = vlen >= 7 && strncasecmp(v + vlen - 7, "chunked", 7) == 0;
            f->until_close = !f->chunked; /* another coding last: the close ends the body */
        }
        line = eol;
    }
    return f->has_length && (f->chunked || f->until_close) ? -1 : 0; /* both: a smuggler's answer */
}

/* The state after a head: 1 if the response is complete, 0 if a body follows. */
static int after_head(Framing *f, int head_request) {
    f->checked = f->line_start = f->line_no = f->colon = 0; /* for the next head, after an interim one */
    if (f->code < 200) { /* interim: the real response follows */
        f->pstate = P_HEAD;
        return 0;
    }
    f->final_code = f->code;
    if (head_request || f->code == 204 || f->code == 304) return 1;
    if (f->chunked) f->pstate = P_CHUNK_SIZE;
    else if (f->has_length && !f->until_close) f->pstate = P_BODY_LEN;
    else f->pstate = P_BODY_EOF;
    return f->pstate == P_BODY_LEN && f->remaining == 0;
}

static int chunk_line(Framing *f, const char *line, size_t n) {
    while (n && (line[n - 1] == '\r')) n--;
    if (f->pstate == P_CHUNK_END) {
        if (n) return -1;
        f->pstate = P_CHUNK_SIZE;
        return 0;
    }
    if (f->pstate == P_TRAILER) return n == 0 ? 1 : 0;
    int64_t size = 0;
    size_t k = 0;
    for (; k < n && k < 15; k++) { /* 15 hex digits at most: no overflow */
        char ch = line[k];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
              : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0) break;
        size = size * 16 + d;
    }
    if (k == 0 || (k < n && line[k] != ';')) return -1; /* llhttp: an extension follows at once */
    f->remaining = size;
    f->pstate = size ? P_CHUNK_DATA : P_TRAILER;
    return 0;
}

/* llhttp judges a chunk line byte by byte: a part of one that no end can make valid (a space
   after the size, data where the CRLF after a chunk belongs) is malformed now, as it is there,
   not once its end arrives. */
static int partial_line_ok(const Framing *f) {
    const char *line = f->buf;
    size_t n = f->len, k = 0;
    if (f->pstate == P_CHUNK_END) return n == 0 || (n == 1 && line[0] == '\r');
    if (f->pstate != P_CHUNK_SIZE) return 1;
    for (; k < n && k < 15; k++) {
        char ch = line[k];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F'))) break;
    }
    if (k == n) return 1;
    if (k == 0) return 0;
    return line[k] == ';' || (line[k] == '\r' && k + 1 == n);
}

int framing_feed(Framing *f, int head_request, const char *p, size_t n) {
    while (n) {
        switch (f->pstate) {
        case P_HEAD: {
            size_t had = f->len;
            const char *end;
            if (had == 0) { /* the usual case: the whole head in this read, parsed where it lies */
                end = memmem(p, n, "\r\n\r\n", 4);
                size_t upto = end != NULL ? (size_t)(end - p) + 4 : n;
                if (check_head(f, p, upto) < 0) return -1;
                if (end != NULL) {
                    if (parse_head(f, p, upto - 2) < 0) return -1;
                    p += upto;
                    n -= upto;
                    if (after_head(f, head_request)) return 1;
                    continue;
                }
            }
            /* A head that spans reads: kept until its end arrives. */
            size_t from = had > 3 ? had - 3 : 0, take = n < HEAD_MAX - had ? n : HEAD_MAX - had;
            if (keep(f, p, take) < 0) return -1;
            end = memmem(f->buf + from, f->len - from, "\r\n\r\n", 4);
            size_t head_len = end != NULL ? (size_t)(end - f->buf) + 4 : f->len;
            if (f->checked < head_len && check_head(f, f->buf, head_len) < 0) return -1;
            if (end == NULL) return take < n ? -1 : 0; /* a head longer than HEAD_MAX */
            size_t used = head_len - had;
            f->len = 0;
            if (parse_head(f, f->buf, head_len - 2) < 0) return -1;
            p += used;
            n -= used;
            if (after_head(f, head_request)) return 1;
            continue;
        }
        case P_BODY_LEN:
        case P_CHUNK_DATA: {
            size_t take = (int64_t)n < f->remaining ? n : (size_t)f->remaining;
            f->remaining -= take;
            p += take;
            n -= take;
            if (f->remaining == 0) {
                if (f->pstate == P_BODY_LEN) return 1;
                f->pstate = P_CHUNK_END;
            }
            continue;
        }
        case P_BODY_EOF:
            return 0; /* the close ends it */
        default: { /* a chunk's size line, the CRLF after its data, or a trailer line */
            const char *eol = memchr(p, '\n', n);
            size_t take = eol ? (size_t)(eol - p) + 1 : n;
            if (keep(f, p, take) < 0) return -1;
            p += take;
            n -= take;
            if (eol == NULL) return partial_line_ok(f) ? 0 : -1;
            int rc = chunk_line(f, f->buf, f->len - 1);
            f->len = 0;
            if (rc) return rc;
        }
        }
    }
    return 0;
}

