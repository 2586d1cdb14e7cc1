/// The help text of `iap-ledger testkit`.
extension TestkitCommand {
    static let usage = """
        usage: iap-ledger testkit <init|purchase|notify|receipt|orders|retention-message|apple> [options]
        A local test store: signed App Store data for a LocalTesting app, from a private CA (not Apple).

          testkit init [--data-dir DIR] [--apple-port N]
              creates DIR/testkit/: the test CA, a config trusting it for one LocalTesting-only app
              (com.example.game: pro.monthly → "pro", coins100 → 100 coins, removeads → "no_ads";
              a shared secret; its own In-App Purchase key, SubscriptionKey_KEYID.p8, as serverAPI;
              verifyReceipt and the Server API at the stand-in, http://127.0.0.1:N, N 8089 unless
              --apple-port; retention rules: de → promotional offer stay50, fr → a message) and
              the state of what was minted; prints how to serve with it.
              Creates no database: `serve` creates the embedded cluster on its first start.
          testkit purchase --user U --product P [--type auto-renewable|consumable|non-consumable|non-renewing]
                           [--expires RFC3339|P1M|PT5M] [--quantity N] [--app-account-token UUID] [--apple-only]
                           [--billing-plan monthly-commitment|upfront]
              mints a signed transaction (a new chain; ids count up from 2000000001 in a new store)
              and posts {"userId","signedTransaction"} to URL/v1/purchases. --type defaults to the
              product's type in the config; --expires (auto-renewable only) to P1M from now.
              --billing-plan monthly-commitment: a monthly plan with a 12-month commitment (API 1.21):
              DID_RENEW bills period 2…12, DID_CHANGE_RENEWAL_STATUS cancels only the commitment.
              --apple-only: posts nothing and prints the transaction id; only `testkit apple`
              knows it (in U's history), as if the app never reached the service: try
              POST /v1/users/U/sync {"transactionId": ID}.
          testkit notify --type TYPE [--subtype S] --original-transaction-id ID [--transaction-id ID] [--expires …]
                         [--percentage N] [--apple-only]
              mints a signed App Store Server Notification V2 about a chain `purchase` minted and
              posts {"signedPayload"} to URL/v1/notifications/apple; `testkit apple` lists every one
              in its notification history. --apple-only: posts nothing (prints its notificationUUID),
              as if the delivery was missed: try POST /v1/admin/reconcile. TYPE:
                DID_RENEW [BILLING_RECOVERY]   a new period from now (as long as the last, or --expires)
                REFUND, REVOKE, REFUND_REVERSED  revokes (or restores) the latest or --transaction-id
                    (REFUND --percentage N: a prorated refund, REFUND_PRORATED with revocationPercentage
                    N, an integer 1…100000 in milliunits: 50000 takes back 50 % of a consumable's coins)
                DID_CHANGE_RENEWAL_STATUS AUTO_RENEW_DISABLED|AUTO_RENEW_ENABLED
                EXPIRED [VOLUNTARY|BILLING_RETRY|PRICE_INCREASE|PRODUCT_NOT_FOR_SALE]
                    (auto-renew off; access still follows expiresDate: purchase with --expires PT1M
                    to see a subscription lapse)
                DID_FAIL_TO_RENEW [GRACE_PERIOD], GRACE_PERIOD_EXPIRED, SUBSCRIBED, DID_CHANGE_RENEWAL_PREF,
                OFFER_REDEEMED, PRICE_INCREASE PENDING|ACCEPTED, REFUND_DECLINED, CONSUMPTION_REQUEST,
                RENEWAL_EXTENDED, ONE_TIME_CHARGE   the chain as it stands; TEST needs no chain
                RESCIND_CONSENT   no chain: a parent withdrew consent for the test store's Apple Account
          testkit receipt --user U [--product P …]
              StoreKit 1: buys each --product (a new chain each; --product may be repeated) and mints
              U's app receipt, a PKCS#7 SignedData in Apple's receipt format signed by the test CA,
              holding every chain U bought this way with its renewals (without --product: a new
              receipt of what U has, as a restore), and posts {"userId","receipt"} to URL/v1/purchases.
              The service verifies it with verifyReceipt: run `testkit apple` beside serve.
          testkit orders [--user U] [--data-dir DIR]
              lists the order ID of every transaction minted so far (one per purchase and renewal,
              as on Apple's e-mail receipt: MT and the transaction id in base 36), tab-separated with
              the transaction, its chain, product and user; `testkit apple` answers Look Up Order ID
              for them, so GET /v1/lookup?orderId=… works on the test store.
          testkit retention-message --original-transaction-id ID [--product P] [--locale L] [--print]
              Apple's Retention Messaging: mints the realtime request the App Store sends when a
              subscriber of a chain `purchase` minted may cancel (product: the chain's, unless
              --product; --locale en-US unless given), signed by the test CA, posts
              {"signedPayload"} to URL/v1/apple/retention-message (no key, as Apple) and prints
              the answer, Apple's RealtimeResponseBody chosen by the config's retention rules
              ({} when none matches: Apple's default message).
          testkit apple [--port N] [--data-dir DIR] [--url URL]
              a stand-in for Apple for the test store on 127.0.0.1:N (the port init wrote in the
              config, else 8089; 0: any free port), until SIGINT/SIGTERM:
              POST /verifyReceipt {"receipt-data","password","exclude-old-transactions"} answers as
              Apple's (status 0 with the receipt's purchases, environment "LocalTesting"; 21002 not
              a receipt, 21003 not signed by the test CA, 21004 wrong password, i.e. not the
              config's sharedSecret), and /inApps/… is Apple's App Store Server API for LocalTesting
              (the config's serverAPI.baseURLs.LocalTesting): Get Transaction History, Get All
              Subscription Statuses, Get Transaction Info, Get Notification History, Look Up Order
              ID (status 1 for an order ID it never minted) and the rest,
              answered from the state — every transaction (per user), renewal and notification
              minted so far, signed again as it answers — and 401 to a token not signed with the
              config's key, as Apple. So serve's sync and reconcile work on the test store.
              Extend a Subscription Renewal Date moves the chain's current period in the state (the
              service's read-back records the new expiresAt) and sends RENEWAL_EXTENDED; Request a
              Test Notification sends a TEST notification signed by the test CA. Set App Account
              Token puts the token on the chain's current transaction and renewal info (so later
              renewals and sync carry it, as Apple's; no notification). Both notifications are POSTed to
              URL/v1/notifications/apple (--url, else IAP_LEDGER_URL, else http://127.0.0.1:8080:
              App Store Connect's notification URL), and Get Test Notification Status reports the
              attempt in Apple's words (SUCCESS, NO_RESPONSE, UNSUCCESSFUL_HTTP_RESPONSE_CODE…).

          common options:
            --data-dir DIR   where the test store is (default ./.iap-ledger, as serve)
            --url URL        the running service (default IAP_LEDGER_URL, else http://127.0.0.1:8080)
            --key SECRET     an API key with the write scope, for purchases (default IAP_LEDGER_KEY)
            --print          print the signed JWS (receipt: the base64 receipt) on stdout instead of posting it
        """
}
