#include <stdlib.h>

struct node {
    int value;
    struct node *next;
};

union number {
    int i;
    float f;
};

union number zero;

typedef struct node node_t;

int length(const node_t *list);

int length(const node_t *list) {
    int n = 0;
    while (list) {
        n++;
        list = list->next;
    }
    return n;
}
