#ifndef LIST_H
#define LIST_H

typedef int item_t;

void push(item_t item);
item_t pop(void);

#endif
