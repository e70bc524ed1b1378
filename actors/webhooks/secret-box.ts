// The secret box moved to core/secret-box.ts (tenancy/ seals provider credentials with it too); the webhook code imports it from here.
export { createSecretBox, keyFileName, webhookSecretKey, type SecretBox } from "../../core/secret-box.ts";
