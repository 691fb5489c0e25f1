// An integrator's webhook receiver: each delivery verified on its raw body
// (webhook.ts), answered 204 at once (400 when it does not verify, and the
// gateway retries it), then processed once: a repeated webhook-id is a
// duplicate. It prints one line per event it processes, with whose it is
// (its mode and company, as the body says: a receiver serving several
// companies from one URL files it under them). CI runs it and
// POSTs deliveries signed as the gateway signs them
// (cmd/gateway/integrators_test.go).
//
//   WEBHOOK_SECRET=whsec_… PORT=8000 npx tsx receiver.ts
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { verifyDelivery, type WebhookEvent } from "./webhook.js";

const secret = process.env.WEBHOOK_SECRET;
if (!secret) throw new Error("set WEBHOOK_SECRET");
const seen = new Set<string>(); // in production, a unique key in your database

function describe(event: WebhookEvent): string {
  return `${event.type} ${event.mode} ${event.companyId} ${resource(event)}`;
}

function resource(event: WebhookEvent): string {
  switch (event.type) {
    case "invoice.issued":
    case "invoice.paid":
    case "invoice.cancelled":
    case "invoice.overdue":
    case "invoice.transmission.updated": {
      const inv = event.data; // InvoiceDetail, transmission included
      return `${inv.id} ${inv.number} ${inv.status} ${inv.totalAmount.toFixed(2)} ${inv.transmission.status}`;
    }
    case "client.created":
    case "client.updated":
      return `${event.data.id} ${event.data.name}`;
    default: // webhook.test, or a type added since schema.ts was generated
      return "ignored";
  }
}

const server = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  let event: WebhookEvent;
  try {
    event = verifyDelivery(secret, req.headers, Buffer.concat(chunks));
  } catch {
    res.writeHead(400).end();
    return;
  }
  res.writeHead(204).end(); // answer first: the gateway waits 10 s at most
  const id = String(req.headers["webhook-id"]);
  if (seen.has(id)) return;
  seen.add(id);
  console.log(describe(event));
});
server.listen(Number(process.env.PORT ?? 8000), "127.0.0.1", () => {
  console.log(`listening on ${(server.address() as AddressInfo).port}`);
});
