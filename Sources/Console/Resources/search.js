import { api } from './api.js';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const digits = /^[0-9]{1,64}$/;
// Apple's order ids are capital letters and digits (MK5TTTVWJH); all digits is a transaction.
const order = /^(?=.*[A-Z])[A-Z0-9]{8,16}$/;

/**
 * Resolves the search text. The shape decides what is asked, and anything no lookup
 * matches is a user id (ids are the backend's own: any text, a UUID or digits too):
 * a UUID → appAccountToken; digits → transactionId, then originalTransactionId;
 * capitals and digits → order ID (asked of Apple, which records the order's purchases).
 * Answers { userId, sentence }: userId null when the match is a chain nobody owns,
 * sentence null when nothing matched (the text is taken as a user id).
 */
export async function resolveSearch(text) {
  const tries = uuid.test(text) ? ['appAccountToken']
    : digits.test(text) ? ['transactionId', 'originalTransactionId']
    : order.test(text) ? ['orderId'] : [];
  let note = null;
  for (const parameter of tries) {
    let found;
    try {
      found = await api(`/v1/lookup?${parameter}=${encodeURIComponent(text)}`);
    } catch (error) {
      if (error.status === 404) continue;
      // An order id Apple could not be asked about (no serverAPI key, Apple down) may
      // still be a user id: say so, and open it as one.
      if (parameter === 'orderId' && error.status !== 401 && error.status !== 0) {
        note = `Not looked up as an order ID (${error.status} ${error.code}: ${error.detail}); opened as a user id.`;
        continue;
      }
      throw error;
    }
    const what = parameter === 'transactionId' && found.originalTransactionId === text ? 'originalTransactionId'
      : parameter === 'orderId' ? 'order ID' : parameter;
    const who = found.userId !== null ? `user ${found.userId}`
      : `chain ${found.originalTransactionId}, which no user has claimed`;
    const chain = found.userId !== null && found.originalTransactionId && what !== 'originalTransactionId'
      ? ` (chain ${found.originalTransactionId})` : '';
    return { userId: found.userId, sentence: `Matched ${what} ${text} → ${who}${chain}.` };
  }
  return { userId: text, sentence: note };
}