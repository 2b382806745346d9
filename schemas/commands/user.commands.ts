import {
  CreateUserCommandSchema,
  DeleteUserCommandSchema,
  DeleteUserResultSchema,
  ErrorsAckCommandSchema,
  ErrorsAckSchema,
  LoginCommandSchema,
  LoginResultSchema,
  LogoutCommandSchema,
  OkSchema,
  ProfileCommandSchema,
  RefreshCommandSchema,
  TokenPairSchema,
  TotpDisableCommandSchema,
  TotpSetupCommandSchema,
  TotpSetupSchema,
  TotpStatusSchema,
  TotpVerifyCommandSchema,
  TwoFactorLoginCommandSchema,
  UpdateUserCommandSchema,
  UserInfoSchema,
} from '../admin-auth.schema.js';
import { defineCommand } from '../command.js';

/** Handled by the users directory (actors/users): the one writer of users.json's rows in the daemon. */
export const USER_COMMANDS = {
  login: defineCommand('users.login', LoginCommandSchema, LoginResultSchema, { invalidCode: 'invalid-body' }),
  loginTwoFactor: defineCommand('users.login_2fa', TwoFactorLoginCommandSchema, TokenPairSchema, { invalidCode: 'invalid-body' }),
  refresh: defineCommand('users.refresh', RefreshCommandSchema, TokenPairSchema, { invalidCode: 'invalid-body' }),
  logout: defineCommand('users.logout', LogoutCommandSchema, OkSchema, { invalidCode: 'invalid-body' }),
  profile: defineCommand('users.profile', ProfileCommandSchema, UserInfoSchema, { invalidCode: 'invalid-body' }),
  totpSetup: defineCommand('users.totp_setup', TotpSetupCommandSchema, TotpSetupSchema, { invalidCode: 'invalid-body' }),
  totpVerify: defineCommand('users.totp_verify', TotpVerifyCommandSchema, TotpStatusSchema, { invalidCode: 'invalid-body' }),
  totpDisable: defineCommand('users.totp_disable', TotpDisableCommandSchema, TotpStatusSchema, { invalidCode: 'invalid-body' }),
  ackErrors: defineCommand('users.ack_errors', ErrorsAckCommandSchema, ErrorsAckSchema, { invalidCode: 'invalid-body' }),
  create: defineCommand('users.create', CreateUserCommandSchema, UserInfoSchema, { invalidCode: 'invalid-body' }),
  update: defineCommand('users.update', UpdateUserCommandSchema, UserInfoSchema, { invalidCode: 'invalid-body' }),
  delete: defineCommand('users.delete', DeleteUserCommandSchema, DeleteUserResultSchema, { invalidCode: 'invalid-body' }),
} as const;
